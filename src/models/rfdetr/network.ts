/**
 * RF-DETR detection (LW-DETR over a windowed DINOv2), eval graph: backbone ->
 * projector -> two-stage proposals (group 0 only, top-300 by the max over all nc+1 logits) -> decoder
 * with learned queries and reparameterised reference boxes -> class logits and boxes of the last
 * layer. Graph contract as the original's export: `input [B,3,H,W]` (normalised RGB) -> `dets
 * [B,300,4]` (cx, cy, w, h normalised) and `labels [B,300,nc+1]` (raw logits).
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { i } from '../../graph/builder.ts';
import { Embedding, LayerNorm, Linear, ModuleList } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { concat, float32, int64, preciseSigmoid, reshape, slice, transpose } from '../../graph/nn.ts';
import { applyBoxDelta } from '../detr/box.ts';
import { MLP } from '../detr/mlp.ts';
import { LibreYOLOError } from '../../errors.ts';
import { RFDETR_COMMON as C, rfdetrConfig, rfdetrSizes, type RfdetrSizeConfig, type RfdetrTask } from './config.ts';
import { DinoV2, tokenGrid, type BackboneGeometry, type TokenGrid } from './dinov2.ts';
import { TransformerDecoder } from './decoder.ts';
import { MultiScaleProjector } from './projector.ts';
import { SegmentationHead } from './segmentation.ts';

class Backbone extends Module {
  readonly encoder: DinoV2;
  readonly projector: MultiScaleProjector;
  constructor(peGrid: number, geometry: BackboneGeometry) {
    super();
    this.encoder = this.addModule('encoder', new DinoV2(peGrid, geometry));
    this.projector = this.addModule('projector', new MultiScaleProjector());
  }
}

/** Proposal boxes (cx, cy, 0.05, 0.05) per token, zeroed where a coordinate leaves (0.01, 0.99). */
export function proposals(grid: TokenGrid): { boxes: Float32Array; valid: Float32Array; allValid: boolean } {
  const n = grid.hp * grid.wp;
  const boxes = new Float32Array(n * 4);
  const valid = new Float32Array(n);
  const lo = Math.fround(0.01);
  const hi = Math.fround(0.99);
  const wh = Math.fround(C.proposalWh);
  let allValid = true;
  for (let y = 0; y < grid.hp; y++) for (let x = 0; x < grid.wp; x++) {
    const t = y * grid.wp + x;
    const box = [Math.fround((x + 0.5) / grid.wp), Math.fround((y + 0.5) / grid.hp), wh, wh];
    const ok = box.every((v) => v > lo && v < hi);
    valid[t] = ok ? 1 : 0;
    if (ok) boxes.set(box, t * 4); else allValid = false;
  }
  return { boxes, valid, allValid };
}

/** `transformer`: the decoder and the 13 groups of two-stage heads (only group 0 runs in eval). */
class Transformer extends Module {
  readonly decoder: TransformerDecoder;
  readonly encOutput: ModuleList<Linear>;
  readonly encOutputNorm: ModuleList<LayerNorm>;
  readonly encOutBboxEmbed: ModuleList<MLP>;
  readonly encOutClassEmbed: ModuleList<Linear>;
  constructor(decLayers: number, classes: number) {
    super();
    const d = C.hiddenDim;
    const groups = Array.from({ length: C.groupDetr });
    this.decoder = this.addModule('decoder', new TransformerDecoder(decLayers));
    this.encOutput = this.addModule('enc_output', new ModuleList(groups.map(() => new Linear(d, d))));
    this.encOutputNorm = this.addModule('enc_output_norm', new ModuleList(groups.map(() => new LayerNorm(d, C.decEps))));
    this.encOutBboxEmbed = this.addModule('enc_out_bbox_embed', new ModuleList(groups.map(() => new MLP(d, d, 4, 3))));
    this.encOutClassEmbed = this.addModule('enc_out_class_embed', new ModuleList(groups.map(() => new Linear(d, classes))));
  }
}

export interface RfdetrOptions {
  /** One of the task's sizes (detection n/s/m/l, segmentation n/s/m/l/x/xx). */
  size: string;
  /** Default `detect`. */
  task?: RfdetrTask;
  /** Dataset classes; the heads have nc + 1 outputs. */
  nc: number;
  /**
   * Default kernel choice of the graphs this network emits: ORT's fused contrib kernels (faster on
   * the CPU provider by bench/rfdetr-fused.ts, within the parity tolerances) or the plain ONNX
   * decomposition. Default: fused unless LIBREYOLO_FUSED_KERNELS=0. Exports are always plain.
   */
  fused?: boolean;
}

/** The process-wide default of `RfdetrOptions.fused`. */
export function fusedKernelsDefault(): boolean {
  return process.env.LIBREYOLO_FUSED_KERNELS !== '0';
}

export interface RfdetrEmitOptions {
  batch: number | null;
  height: number | null;
  width: number | null;
  /** Also expose the intermediate taps (position embedding, stage maps, projector, proposals, aux heads). */
  rawOutputs?: boolean;
  /** Emit ORT's fused contrib kernels (attention, skip-LayerNorm, GELU) instead of the plain decomposition (default: the network's). */
  fused?: boolean;
  /** Take the proposal indices from an int64 input `enc_topk_index [B, k]` instead of TopK (parity debugging). */
  injectTopk?: boolean;
}

export class RfdetrNetwork extends Module {
  readonly transformer: Transformer;
  readonly classEmbed: Linear;
  readonly bboxEmbed: MLP;
  /** The mask head (task segment only). */
  readonly segmentationHead: SegmentationHead | null;
  readonly refpointEmbed: Embedding;
  readonly queryFeat: Embedding;
  readonly backbone: ModuleList<Backbone>;
  /** The size's configuration for its task. */
  readonly config: RfdetrSizeConfig;
  readonly task: RfdetrTask;

  constructor(readonly options: RfdetrOptions) {
    super();
    this.task = options.task ?? 'detect';
    const cfg = rfdetrConfig(options.size, this.task);
    if (!cfg) throw new LibreYOLOError('model_load_failed', `Unknown rfdetr ${this.task} size '${options.size}'. Sizes: ${rfdetrSizes(this.task).join(', ')}.`);
    this.config = cfg;
    const d = C.hiddenDim;
    const k = options.nc + 1;
    const rows = cfg.numQueries * C.groupDetr;
    this.transformer = this.addModule('transformer', new Transformer(cfg.decLayers, k));
    this.classEmbed = this.addModule('class_embed', new Linear(d, k));
    this.bboxEmbed = this.addModule('bbox_embed', new MLP(d, d, 4, 3));
    this.segmentationHead = this.task === 'segment' ? this.addModule('segmentation_head', new SegmentationHead(cfg.decLayers)) : null;
    this.refpointEmbed = this.addModule('refpoint_embed', new Embedding(rows, 4));
    this.queryFeat = this.addModule('query_feat', new Embedding(rows, d));
    this.backbone = this.addModule('backbone', new ModuleList([new Backbone(cfg.peGrid, cfg)]));
    this.assignPaths();
  }

  get nc(): number {
    return this.options.nc;
  }

  private geometry(opts: RfdetrEmitOptions): { grid: TokenGrid; height: number; width: number } {
    const size = this.config.resolution;
    if ((opts.height === null) !== (opts.width === null)) throw new LibreYOLOError('invalid_imgsz', 'RF-DETR graphs need both input height and width (or neither, for the native size).');
    const height = opts.height ?? size;
    const width = opts.width ?? size;
    return { grid: tokenGrid(height, width, this.config), height, width };
  }

  /**
   * The predict graph: `images [B,3,H,W]` -> `output [B, 4+nc+1, 300]`, rows x1, y1, x2, y2 in
   * input pixels (not clipped) then the sigmoid score of every class column, the extra column
   * (index nc) included: the NMS-free top-k runs over all of them, as in the original.
   */
  emitInference(b: GraphBuilder, opts: RfdetrEmitOptions): void {
    const { grid, height, width } = this.geometry(opts);
    const batch = opts.batch ?? 'batch';
    const images = b.input('images', 'float32', [batch, 3, height, width]);
    const out = this.forward(b, images, grid, { raw: false, injected: null, fused: opts.fused ?? this.options.fused ?? fusedKernelsDefault() });
    const decoded = b.scope('decode', () => {
      const half = b.op('Mul', [slice(b, out.boxes, -1, 2, 4), b.scalar(0.5, 'half')]);
      const centre = slice(b, out.boxes, -1, 0, 2);
      const scale = b.constant('input_wh', float32([width, height, width, height], [4]));
      const xyxy = b.op('Mul', [concat(b, [b.op('Sub', [centre, half]), b.op('Add', [centre, half])], -1), scale]);
      return concat(b, [transpose(b, xyxy, [0, 2, 1]), transpose(b, preciseSigmoid(b, out.logits), [0, 2, 1])], 1);
    });
    b.output('output', decoded, 'float32', [batch, 4 + this.nc + 1, this.config.numQueries]);
    if (out.masks) b.output('masks', out.masks, 'float32', [batch, this.config.numQueries, Math.floor(height / 4), Math.floor(width / 4)]);
  }

  /**
   * The original's export layout: `input [B,3,H,W]` -> `dets [B,300,4]` (cx, cy, w, h normalised)
   * and `labels [B,300,nc+1]` (raw logits); with `rawOutputs`, also every parity tap.
   */
  emitExport(b: GraphBuilder, opts: RfdetrEmitOptions): void {
    const { grid, height, width } = this.geometry(opts);
    const batch = opts.batch ?? 'batch';
    const k = Math.min(this.config.numQueries, grid.hp * grid.wp);
    const input = b.input('input', 'float32', [batch, 3, height, width]);
    const injected = opts.injectTopk ? b.input('enc_topk_index', 'int64', [batch, k]) : null;
    const raw = opts.rawOutputs ?? false;
    // Exports are portable ONNX (no contrib kernels) unless asked otherwise.
    const out = this.forward(b, input, grid, { raw, injected, fused: opts.fused ?? false });
    const q = this.config.numQueries;
    const nk = this.nc + 1;
    b.output('dets', out.boxes, 'float32', [batch, q, 4]);
    b.output('labels', out.logits, 'float32', [batch, q, nk]);
    if (out.masks) b.output('masks', out.masks, 'float32', [batch, q, Math.floor(height / 4), Math.floor(width / 4)]);
    if (!raw) return;
    if (out.taps.queryFeatures) b.output('seg_query_features', out.taps.queryFeatures, 'float32', [batch, q, C.hiddenDim]);
    const n = grid.hp * grid.wp;
    b.output('pos_embed', out.taps.posEmbed!, 'float32', [1, n + 1, C.vitDim]);
    out.taps.stages!.forEach((s, j) => b.output(`dino_stage${C.outFeatureIndexes[j]}`, s, 'float32', [batch, C.vitDim, grid.hp, grid.wp]));
    b.output('projector_p4', out.taps.projector!, 'float32', [batch, C.hiddenDim, grid.hp, grid.wp]);
    b.output('enc_token_maxlogit', out.taps.maxLogit!, 'float32', [batch, n]);
    b.output('enc_topk_token_index', out.taps.topk!, 'int64', [batch, k]);
    b.output('enc_pred_logits', out.taps.encLogits!, 'float32', [batch, k, nk]);
    b.output('enc_pred_boxes', out.taps.encBoxes!, 'float32', [batch, k, 4]);
    for (const [l, v] of out.taps.aux!) {
      b.output(`aux${l}_pred_logits`, v.logits, 'float32', [batch, q, nk]);
      b.output(`aux${l}_pred_boxes`, v.boxes, 'float32', [batch, q, 4]);
    }
  }

  forward(b: GraphBuilder, input: string, grid: TokenGrid, opts: { raw: boolean; injected: string | null; fused: boolean }): {
    boxes: string; logits: string; masks: string | null;
    taps: { queryFeatures?: string; posEmbed?: string; stages?: string[]; projector?: string; maxLogit?: string; topk?: string; encLogits?: string; encBoxes?: string; aux?: Map<number, { logits: string; boxes: string }> };
  } {
    const bb = this.backbone.at(0);
    const { stages, posEmbed, p4 } = b.scope('backbone', () => b.scope('0', () => {
      const { stages: st, posEmbed: pe } = bb.encoder.emit(b, input, grid, opts.fused);
      return { stages: st, posEmbed: pe, p4: bb.projector.emit(b, st) };
    }));
    const n = grid.hp * grid.wp;
    const k = Math.min(this.config.numQueries, n);
    const tr = this.transformer;
    const memory = transpose(b, reshape(b, p4, [0, C.hiddenDim, n]), [0, 2, 1]);

    // Two-stage proposals, group 0.
    const prop = proposals(grid);
    const enc = b.scope('transformer', () => b.scope('proposals', () => {
      const headsIn = prop.allValid ? memory : b.op('Mul', [memory, b.constant('valid', float32(prop.valid, [1, n, 1]))]);
      // Node names keep the module paths (`enc_out_class_embed/0/...`): quantize keep-lists match on them.
      const om = b.scope('enc_output_norm', () => tr.encOutputNorm.at(0).emit(b, b.scope('enc_output', () => tr.encOutput.at(0).emit(b, headsIn))));
      const logitsAll = b.scope('enc_out_class_embed', () => tr.encOutClassEmbed.at(0).emit(b, om));
      const maxLogit = b.op('ReduceMax', [logitsAll], { axes: { ints: [-1] }, keepdims: i(0) });
      const topk = opts.injected ?? b.opMulti('TopK', [maxLogit, b.constant('k', int64([k]))], 2, { axis: i(1), largest: i(1), sorted: i(1) })[1]!;
      const index = b.op('Unsqueeze', [topk, b.constant('axes', int64([-1]))]);
      const gather = (x: string): string => b.op('GatherND', [x, index], { batch_dims: i(1) });
      const picked = b.op('Gather', [b.constant('proposals', float32(prop.boxes, [n, 4])), topk], { axis: i(0) });
      const boxes = applyBoxDelta(b, b.scope('enc_out_bbox_embed', () => tr.encOutBboxEmbed.at(0).emit(b, gather(om))), picked);
      return { maxLogit, topk, boxes, logits: opts.raw ? gather(logitsAll) : undefined };
    }));

    // Queries: learned content, reference boxes reparameterised on the ranked proposals (3.9).
    const q = this.config.numQueries;
    const { tgt, ref } = b.scope('queries', () => {
      // Content vectors are shared by the batch; expanded so batch-strict kernels (fused attention) accept them.
      const batchDim = slice(b, b.op('Shape', [enc.boxes]), 0, 0, 1);
      const content = b.op('Expand', [slice(b, this.queryFeat.weight(b), 0, 0, q), concat(b, [batchDim, b.constant('content', int64([q, C.hiddenDim]))], 0)]);
      const learned = b.op('Unsqueeze', [slice(b, this.refpointEmbed.weight(b), 0, 0, q), b.constant('axes', int64([0]))]);
      if (k === q) return { tgt: content, ref: applyBoxDelta(b, learned, enc.boxes) };
      // Fewer tokens than queries: the leftover slots keep their raw learned boxes.
      const head = applyBoxDelta(b, slice(b, learned, 1, 0, k), enc.boxes);
      const restShape = concat(b, [batchDim, b.constant('rest', int64([q - k, 4]))], 0);
      return { tgt: content, ref: concat(b, [head, b.op('Expand', [slice(b, learned, 1, k, q), restShape])], 1) };
    });

    const last = this.config.decLayers - 1;
    const wanted = new Set<number>(opts.raw ? Array.from({ length: last }, (_, l) => l) : []);
    const hs = b.scope('transformer', () => b.scope('decoder', () => tr.decoder.forward(b, tgt, ref, memory, [[grid.hp, grid.wp]], q, wanted, opts.fused)));
    const heads = (l: number): { logits: string; boxes: string } => b.scope(`heads${l}`, () => ({
      logits: this.classEmbed.emit(b, hs.get(l)!),
      boxes: applyBoxDelta(b, this.bboxEmbed.emit(b, hs.get(l)!), ref),
    }));
    const final = heads(last);
    const head = this.segmentationHead;
    const seg = head ? b.scope('segmentation_head', () => head.forward(b, p4, hs.get(last)!, grid.hp * this.config.patchSize, grid.wp * this.config.patchSize, q)) : null;
    const masks = seg?.masks ?? null;
    if (!opts.raw) return { ...final, masks, taps: {} };
    const aux = new Map([...wanted].map((l) => [l, heads(l)] as const));
    return {
      ...final,
      masks,
      taps: { ...(seg ? { queryFeatures: seg.queryFeatures } : {}), posEmbed, stages, projector: p4, maxLogit: enc.maxLogit, topk: enc.topk, encLogits: enc.logits, encBoxes: enc.boxes, aux },
    };
  }
}
