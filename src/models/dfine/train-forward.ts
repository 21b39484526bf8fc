/**
 * D-FINE's train-mode forward, the values its matcher and losses read
 * (train-outputs.ts has the table). As the original's model in train mode:
 * - BatchNorm on batch statistics with momentum-0.1 running-stat outputs (conv.ts), also in the
 *   frozen stem; FrozenBatchNorm2d (l, x) stays in eval. Dropout is 0 everywhere in the original's
 *   configuration, so there is none here.
 * - Position embedding, anchors and valid mask rebuilt for the input size (any multiple of 32).
 * - Every decoder layer records logits, boxes and corners; layer 0's pre head; the encoder
 *   proposals at the top-k tokens (not detached); the gradients stop where the original's detach() calls stop them.
 * - Contrastive denoising from injected draws (DFINE_DN_INPUTS): classes through
 *   denoising_class_embed (its padding row nc gets no gradient, as padding_idx), references in logit
 *   space prepended to the proposals, the boolean self-attention mask, then every per-query output
 *   split into the denoising slots and the 300 matching queries.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { i } from '../../graph/builder.ts';
import { concat, preciseSigmoid, slice } from '../../graph/nn.ts';
import { LibreYOLOError } from '../../errors.ts';
import { DFINE_COMMON as C } from './config.ts';
import { generateAnchors, type Refinement } from './decoder.ts';
import type { DfineNetwork } from './network.ts';
import { DFINE_DN_INPUTS, DFINE_TOPK_INDEX, dfineDnInputSpecs, type DfineQuerySplit, type DfineTrainOutputs } from './train-outputs.ts';

export interface DfineTrainForwardOptions {
  height: number;
  width: number;
  /** Denoising slots N (the draw's slot count); 0 = no denoising (the original with no targets). */
  dnSlots: number;
  /**
   * Take the 300 proposal tokens from the int64 input DFINE_TOPK_INDEX [B, 300] instead of TopK. A
   * loss graph must: its query rows have to be the assignment forward's, and near-tied proposals
   * (gaps of ~1e-6) swap places between two graphs whose float32 rounding differs.
   */
  injectTopk?: boolean;
}

/** The stride-32 grid the original trains on: any input whose sides are multiples of 32. */
function checkTrainSize(height: number, width: number): void {
  if (!(height > 0 && width > 0 && height % 32 === 0 && width % 32 === 0)) {
    throw new LibreYOLOError('invalid_imgsz', `D-FINE trains on sizes that are multiples of 32, got ${height}x${width}.`);
  }
}

/**
 * Emits the train-mode forward on `images` [B, 3, H, W] (RGB, /255). Needs `b.training`. With
 * `dnSlots` > 0 it declares the denoising inputs (DFINE_DN_INPUTS, shapes from dfineDnInputSpecs);
 * with `injectTopk`, the proposal-index input DFINE_TOPK_INDEX.
 */
export function emitDfineTrainForward(b: GraphBuilder, net: DfineNetwork, images: string, batch: number, opts: DfineTrainForwardOptions): DfineTrainOutputs {
  if (!b.training) throw new Error('emitDfineTrainForward needs a training GraphBuilder (b.training = true)');
  const { height, width, dnSlots } = opts;
  checkTrainSize(height, width);
  const dec = net.decoder;
  const nc = net.options.nc;
  const k = C.numQueries;
  const feats = net.backbone.emit(b, images);
  const sizes = net.strides.map((s) => [height / s, width / s] as [number, number]);
  const enc = net.encoder.emit(b, feats, sizes);
  const { up, regScale, project } = dec.fdrConstants();

  return b.scope('decoder', () => {
    const injected = opts.injectTopk ? b.input(DFINE_TOPK_INDEX, 'int64', [batch, k]) : null;
    const sel = dec.selectQueries(b, enc, sizes, generateAnchors(sizes), injected);
    const stop = (v: string): string => b.op('Identity', [v], {}, { name: 'StopGradient' });
    const index = b.op('Unsqueeze', [sel.topk, b.constant('axes', { dtype: 'int64', dims: [1], data: BigInt64Array.of(-1n) })]);
    const encOut = { logits: b.op('GatherND', [sel.encLogits, index], { batch_dims: i(1) }), boxes: preciseSigmoid(b, sel.unact) };
    let content = stop(sel.topMem);
    let refUnact = stop(sel.unact);
    let mask: string | undefined;
    if (dnSlots > 0) {
      const specs = dfineDnInputSpecs(batch, dnSlots, k);
      const input = (name: string): string => b.input(name, specs[name]!.dtype, specs[name]!.dims);
      const cls = input(DFINE_DN_INPUTS.queryClass);
      const dnRef = input(DFINE_DN_INPUTS.queryBboxUnact);
      const blocked = input(DFINE_DN_INPUTS.attnMask);
      // padding_idx = nc: the padding row is read as stored but receives no gradient.
      const weight = dec.denoisingClassEmbed.weight(b);
      const table = b.scope('denoising_class_embed', () => concat(b, [slice(b, weight, 0, 0, nc), stop(slice(b, weight, 0, nc, nc + 1))], 0));
      const dnContent = b.op('Gather', [table, cls], { axis: i(0) });
      content = concat(b, [dnContent, content], 1);
      refUnact = concat(b, [dnRef, refUnact], 1);
      mask = b.op('Where', [blocked, b.scalar(-Infinity, 'blocked'), b.scalar(0, 'open')], {}, { name: 'AttnMask' });
    }
    const r = dec.refine(b, content, refUnact, sel.memory, sizes, dnSlots + k, { train: true, ...(mask ? { mask } : {}) });
    const part = (from: number, count: number): DfineQuerySplit => splitQueries(b, r, from, count, dnSlots + k);
    return {
      batch, nc, regMax: C.regMax, up, regScale, project,
      matching: dnSlots > 0 ? part(dnSlots, k) : part(0, k),
      denoising: dnSlots > 0 ? part(0, dnSlots) : null,
      enc: encOut,
      topk: sel.topk,
    };
  });
}

/** Queries [from, from + count) of every per-query output of `total` (the original's torch.split on dn_num_split). */
function splitQueries(b: GraphBuilder, r: Refinement, from: number, count: number, total: number): DfineQuerySplit {
  const cut = (v: string): string => (count === total ? v : slice(b, v, 1, from, from + count));
  return {
    queries: count,
    layers: r.layers.map((l) => ({ logits: cut(l.logits), boxes: cut(l.boxes), corners: cut(l.corners) })),
    refPoints: cut(r.ref0),
    pre: { logits: cut(r.pre!.logits), boxes: cut(r.pre!.boxes) },
  };
}
