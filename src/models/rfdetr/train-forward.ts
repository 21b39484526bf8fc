/**
 * RF-DETR's train-mode forward (the values train-outputs.ts lists). Differences from the eval graph:
 * - all 13 x 300 query slots (`query_feat`, `refpoint_embed`);
 * - 13 independent proposal groups, each with its own enc_output / enc_output_norm /
 *   enc_out_class_embed / enc_out_bbox_embed and its own top-k over all tokens, concatenated
 *   group-major (group g feeds slots g*300 onward);
 * - decoder self-attention restricted to each group of 300;
 * - the proposal boxes detached where the decoder references them (`refpoint_ts`); the learned
 *   `refpoint_embed` deltas are not;
 * - every layer's heads, and the encoder outputs.
 * Dropout and drop-path are 0 in the original, so the layer maths equals eval's. Plain ONNX
 * kernels throughout (the autodiff has no rules for the fused contrib ops).
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { i } from '../../graph/builder.ts';
import { concat, float32, int64, reshape, slice, transpose } from '../../graph/nn.ts';
import { applyBoxDelta } from '../detr/box.ts';
import { RFDETR_COMMON as C } from './config.ts';
import { tokenGrid } from './dinov2.ts';
import { proposals, type RfdetrNetwork } from './network.ts';
import type { RfdetrHeadOutputs, RfdetrTrainOutputs } from './train-outputs.ts';

export interface RfdetrTrainForwardOptions {
  height: number;
  width: number;
  /**
   * Every group's proposal tokens as an int64 graph value [B, G*k] (RFDETR_TOPK_INDEX, group-major)
   * instead of TopK. A loss graph should take the assignment forward's: its query slots must hold
   * the proposals the matching saw, and near-tied proposal scores (gaps of ~5e-7) can swap between
   * two graphs that round differently.
   */
  topkIndex?: string;
  /** Query groups (default 13, the original's group_detr); 1 only to show what the groups change. */
  groups?: number;
}

const stop = (b: GraphBuilder, v: string): string => b.op('Identity', [v], {}, { name: 'StopGradient' });

/** Emits the train-mode forward on `images` [B, 3, H, W] (normalised RGB). */
export function emitRfdetrTrainForward(b: GraphBuilder, net: RfdetrNetwork, images: string, batch: number, opts: RfdetrTrainForwardOptions): RfdetrTrainOutputs {
  const grid = tokenGrid(opts.height, opts.width, net.config);
  const G = opts.groups ?? C.groupDetr;
  const q = net.config.numQueries;
  const n = grid.hp * grid.wp;
  const k = Math.min(q, n);
  const nk = net.nc + 1;
  const tr = net.transformer;
  const bb = net.backbone.at(0);
  const p4 = b.scope('backbone', () => b.scope('0', () => bb.projector.emit(b, bb.encoder.emit(b, images, grid, false).stages)));
  const memory = transpose(b, reshape(b, p4, [0, C.hiddenDim, n]), [0, 2, 1]);

  const prop = proposals(grid);
  const injected = opts.topkIndex ?? null;
  const enc = b.scope('transformer', () => b.scope('proposals', () => {
    const headsIn = prop.allValid && !b.anySize ? memory : b.op('Mul', [memory, b.constant('valid', float32(prop.valid, [1, n, 1]))]);
    const table = b.constant('proposals', float32(prop.boxes, [n, 4]));
    const groups = Array.from({ length: G }, (_, g) => b.scope(`group${g}`, () => {
      const om = b.scope('enc_output_norm', () => tr.encOutputNorm.at(g).emit(b, b.scope('enc_output', () => tr.encOutput.at(g).emit(b, headsIn))));
      const logitsAll = b.scope('enc_out_class_embed', () => tr.encOutClassEmbed.at(g).emit(b, om));
      const topk = injected
        ? slice(b, injected, 1, g * k, (g + 1) * k)
        : b.opMulti('TopK', [b.op('ReduceMax', [logitsAll], { axes: { ints: [-1] }, keepdims: i(0) }), b.constant('k', int64([k]))], 2, { axis: i(1), largest: i(1), sorted: i(1) })[1]!;
      const index = b.op('Unsqueeze', [topk, b.constant('axes', int64([-1]))]);
      const gather = (x: string): string => b.op('GatherND', [x, index], { batch_dims: i(1) });
      const picked = b.op('Gather', [table, topk], { axis: i(0) });
      const boxes = applyBoxDelta(b, b.scope('enc_out_bbox_embed', () => tr.encOutBboxEmbed.at(g).emit(b, gather(om))), picked);
      return { topk, boxes, logits: gather(logitsAll) };
    }));
    const cat = (xs: string[]): string => (xs.length === 1 ? xs[0]! : concat(b, xs, 1));
    return { topk: cat(groups.map((x) => x.topk)), boxes: cat(groups.map((x) => x.boxes)), logits: cat(groups.map((x) => x.logits)) };
  }));

  // Queries: learned content; references = learned deltas on the detached proposals, the first G*k
  // slots paired with the concatenated proposals (misaligned with the groups when k < 300, as the
  // original), the rest raw. A graph for any size always splits (the rest is empty when k = 300).
  const slots = G * q;
  const { tgt, ref } = b.scope('queries', () => {
    const content = b.op('Expand', [slice(b, net.queryFeat.weight(b), 0, 0, slots), b.constant('content', int64([batch, slots, C.hiddenDim]))]);
    const learned = b.op('Unsqueeze', [slice(b, net.refpointEmbed.weight(b), 0, 0, slots), b.constant('axes', int64([0]))]);
    const ts = stop(b, enc.boxes);
    if (G * k === slots && !b.anySize) return { tgt: content, ref: applyBoxDelta(b, learned, ts) };
    const head = applyBoxDelta(b, slice(b, learned, 1, 0, G * k), ts);
    return { tgt: content, ref: concat(b, [head, b.op('Expand', [slice(b, learned, 1, G * k, slots), b.constant('rest', int64([batch, slots - G * k, 4]))])], 1) };
  });

  const L = net.config.decLayers;
  const all = new Set(Array.from({ length: L }, (_, l) => l));
  const hs = b.scope('transformer', () => b.scope('decoder', () => tr.decoder.forward(b, tgt, ref, memory, [[grid.hp, grid.wp]], slots, all, false, G)));
  const layers: RfdetrHeadOutputs[] = Array.from({ length: L }, (_, l) => b.scope(`heads${l}`, () => ({
    logits: net.classEmbed.emit(b, hs.get(l)!),
    boxes: applyBoxDelta(b, net.bboxEmbed.emit(b, hs.get(l)!), ref),
  })));
  return { batch, classes: nk, groups: G, queries: q, k, layers, enc: { logits: enc.logits, boxes: enc.boxes }, topk: enc.topk };
}
