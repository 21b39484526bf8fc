/**
 * The D-FINE decoder (`DFINETransformer`; keys `decoder.*`): query
 * selection from the encoder memory (anchors, valid mask, enc_output, score/box heads, top-k), then
 * post-norm layers (self-attention, deformable cross-attention without projections, gate, FFN)
 * driving the FDR loop; in eval, score heads and LQE only at the last layer (train-forward.ts runs
 * the train path: every layer, the pre head, denoising queries).
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { i } from '../../graph/builder.ts';
import { Embedding, LayerNorm, Linear, ModuleList } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { concat, float32, int64, preciseSigmoid, reshape, silu, softmax, split } from '../../graph/nn.ts';
import type { HostTensor } from '../../graph/tensor.ts';
import { MSDeformAttn } from '../detr/deformable-attention.ts';
import { MLP } from '../detr/mlp.ts';
import { MultiheadAttention } from '../detr/multihead-attention.ts';
import { DFINE_COMMON as C, type DfineConfig } from './config.ts';
import { ConvNorm } from './conv.ts';
import { distance2bbox, integral, inverseSigmoid, weightingFunction } from './fdr.ts';

/** Anchors (logit space, +inf where invalid) and the valid mask for level grids `shapes`, finest first. */
export function generateAnchors(shapes: ReadonlyArray<readonly [number, number]>, gridSize = 0.05, eps = C.anchorEps): { anchors: Float32Array; valid: Uint8Array } {
  const f = Math.fround;
  const total = shapes.reduce((a, [h, w]) => a + h * w, 0);
  const anchors = new Float32Array(total * 4);
  const valid = new Uint8Array(total);
  let t = 0;
  shapes.forEach(([h, w], lvl) => {
    const wh = f(gridSize * 2 ** lvl);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++, t++) {
      const a = [f(f(x + 0.5) / w), f(f(y + 0.5) / h), wh, wh];
      const ok = a.every((v) => v > eps && v < 1 - eps);
      valid[t] = ok ? 1 : 0;
      for (let k = 0; k < 4; k++) anchors[t * 4 + k] = ok ? Math.log(f(a[k]! / f(1 - a[k]!))) : Infinity;
    }
  });
  return { anchors, valid };
}

class Gate extends Module {
  readonly gate: Linear;
  readonly norm: LayerNorm;
  constructor(readonly dim: number) {
    super();
    this.gate = this.addModule('gate', new Linear(2 * dim, 2 * dim));
    this.norm = this.addModule('norm', new LayerNorm(dim, C.lnEps));
  }
  forward(b: GraphBuilder, x1: string, x2: string): string {
    const g = preciseSigmoid(b, this.gate.emit(b, concat(b, [x1, x2], -1)));
    const [g1, g2] = split(b, g, [this.dim, this.dim], -1) as [string, string];
    return this.norm.emit(b, b.op('Add', [b.op('Mul', [g1, x1]), b.op('Mul', [g2, x2])]));
  }
}

class DecoderLayer extends Module {
  readonly selfAttn: MultiheadAttention;
  readonly norm1: LayerNorm;
  readonly crossAttn: MSDeformAttn;
  readonly gateway: Gate;
  readonly linear1: Linear;
  readonly linear2: Linear;
  readonly norm3: LayerNorm;
  constructor(cfg: DfineConfig, readonly act: 'relu' | 'silu') {
    super();
    const d = cfg.decHidden;
    this.selfAttn = this.addModule('self_attn', new MultiheadAttention(d, C.heads));
    this.norm1 = this.addModule('norm1', new LayerNorm(d, C.lnEps));
    this.crossAttn = this.addModule('cross_attn', new MSDeformAttn({ dModel: d, heads: C.heads, levels: cfg.points.length, points: cfg.points, projections: false, pointsScaleBuffer: true }));
    this.gateway = this.addModule('gateway', new Gate(d));
    this.linear1 = this.addModule('linear1', new Linear(d, cfg.decFfn));
    this.linear2 = this.addModule('linear2', new Linear(cfg.decFfn, d));
    this.norm3 = this.addModule('norm3', new LayerNorm(d, C.lnEps));
  }
  /** `mask`: the additive self-attention mask (train-mode denoising), none in eval. */
  forward(b: GraphBuilder, tgt: string, pos: string, ref: string, memory: string, shapes: ReadonlyArray<readonly [number, number]>, queries: number, mask?: string): string {
    const withPos = (x: string): string => b.op('Add', [x, pos]);
    let t = this.norm1.emit(b, b.op('Add', [tgt, this.selfAttn.emit(b, withPos(tgt), tgt, mask)]));
    const ca = this.crossAttn.emit(b, withPos(t), ref, memory, shapes, queries);
    t = this.gateway.emit(b, t, ca);
    const ffn = b.scope('ffn', () => {
      const h = this.linear1.emit(b, t);
      return this.linear2.emit(b, this.act === 'relu' ? b.op('Relu', [h]) : silu(b, h));
    });
    const clamped = b.op('Clip', [b.op('Add', [t, ffn]), b.scalar(-65504, 'lo'), b.scalar(65504, 'hi')]);
    return this.norm3.emit(b, clamped);
  }
}

/** LQE: top-4 bin probabilities per edge and their mean -> MLP 20 -> 64 -> 1, one scalar per query. */
class LQE extends Module {
  readonly regConf: MLP;
  constructor(readonly bins: number, act: 'relu' | 'silu') {
    super();
    this.regConf = this.addModule('reg_conf', new MLP(4 * 5, 64, 1, 2, act));
  }
  forward(b: GraphBuilder, scores: string, corners: string): string {
    const p = softmax(b, reshape(b, corners, [0, 0, 4, this.bins]), -1);
    const top = b.opMulti('TopK', [p, b.constant('k', int64([4]))], 2, { axis: i(-1), largest: i(1), sorted: i(1) })[0]!;
    const mean = b.op('ReduceMean', [top], { axes: { ints: [-1] }, keepdims: i(1) });
    const stat = reshape(b, concat(b, [top, mean], -1), [0, 0, 20]);
    return b.op('Add', [scores, this.regConf.emit(b, stat)]);
  }
}

/** `decoder.decoder`: the layer stack and the LQE heads (the FDR loop itself runs in DfineDecoder). */
class TransformerDecoder extends Module {
  readonly layers: ModuleList<DecoderLayer>;
  readonly lqeLayers: ModuleList<LQE>;
  constructor(cfg: DfineConfig, act: 'relu' | 'silu') {
    super();
    this.layers = this.addModule('layers', new ModuleList(Array.from({ length: cfg.decLayers }, () => new DecoderLayer(cfg, act))));
    this.lqeLayers = this.addModule('lqe_layers', new ModuleList(Array.from({ length: cfg.decLayers }, () => new LQE(C.regMax + 1, act))));
  }
}

class EncOutput extends Module {
  readonly proj: Linear;
  readonly norm: LayerNorm;
  constructor(d: number) {
    super();
    this.proj = this.addModule('proj', new Linear(d, d));
    this.norm = this.addModule('norm', new LayerNorm(d, C.lnEps));
  }
  forward(b: GraphBuilder, x: string): string {
    return this.norm.emit(b, this.proj.emit(b, x));
  }
}

export interface DecoderOutputs {
  logits: string;
  boxes: string;
  maxLogit: string;
  topk: string;
}

/** Query selection: the memory, the scored tokens and the 300 proposals. */
export interface QuerySelection {
  /** [B, T, C] unmasked memory (the cross-attention's value). */
  memory: string;
  /** [B, T, nc] enc_score_head over the masked memory. */
  encLogits: string;
  /** [B, T] max class logit per token. */
  maxLogit: string;
  /** [B, k] int64 selected tokens. */
  topk: string;
  /** [B, k, C] enc_output at the selected tokens. */
  topMem: string;
  /** [B, k, 4] enc_bbox_head(topMem) + anchors (logit space). */
  unact: string;
}

/** One refinement layer's outputs. */
export interface RefinedLayer {
  logits: string;
  boxes: string;
  corners: string;
}

export interface Refinement {
  /** Eval: the last layer only; train: every layer. */
  layers: RefinedLayer[];
  /** Layer 0's pre head (train only) and ref0 (detached in train). */
  pre: { logits: string; boxes: string } | null;
  ref0: string;
}

export class DfineDecoder extends Module {
  readonly inputProj: ModuleList<ConvNorm> | null;
  readonly decoder: TransformerDecoder;
  readonly denoisingClassEmbed: Embedding;
  readonly queryPosHead: MLP;
  readonly encOutput: EncOutput;
  readonly encScoreHead: Linear;
  readonly encBboxHead: MLP;
  readonly decScoreHead: ModuleList<Linear>;
  readonly preBboxHead: MLP;
  readonly decBboxHead: ModuleList<MLP>;
  /** `act`: the decoder MLPs' and FFNs' activation (ReLU for D-FINE, SiLU for DEIM). */
  constructor(readonly cfg: DfineConfig, readonly nc: number, readonly shapes: ReadonlyArray<readonly [number, number]>, act: 'relu' | 'silu' = 'relu') {
    super();
    const d = cfg.decHidden;
    const L = cfg.decLayers;
    this.addParameter('up', [1]).value.data[0] = C.up;
    this.addParameter('reg_scale', [1]).value.data[0] = cfg.regScale;
    const total = shapes.reduce((a, [h, w]) => a + h * w, 0);
    const { anchors, valid } = generateAnchors(shapes);
    this.addBuffer('anchors', [1, total, 4]).value = float32(anchors, [1, total, 4]);
    this.addBuffer('valid_mask', [1, total, 1], 'bool').value = { dtype: 'bool', dims: [1, total, 1], data: valid };
    this.inputProj = cfg.encHidden !== d
      ? this.addModule('input_proj', new ModuleList(shapes.map(() => new ConvNorm({ cin: cfg.encHidden, cout: d, k: 1, act: null, norm: 'norm' }))))
      : null;
    this.decoder = this.addModule('decoder', new TransformerDecoder(cfg, act));
    this.denoisingClassEmbed = this.addModule('denoising_class_embed', new Embedding(nc + 1, d));
    this.queryPosHead = this.addModule('query_pos_head', new MLP(4, 2 * d, d, 2, act));
    this.encOutput = this.addModule('enc_output', new EncOutput(d));
    this.encScoreHead = this.addModule('enc_score_head', new Linear(d, nc));
    this.encBboxHead = this.addModule('enc_bbox_head', new MLP(d, d, 4, 3, act));
    this.decScoreHead = this.addModule('dec_score_head', new ModuleList(Array.from({ length: L }, () => new Linear(d, nc))));
    this.preBboxHead = this.addModule('pre_bbox_head', new MLP(d, d, 4, 3, act));
    this.decBboxHead = this.addModule('dec_bbox_head', new ModuleList(Array.from({ length: L }, () => new MLP(d, d, 4 * (C.regMax + 1), 3, act))));
  }

  /** A tensor of this module as loaded (up, reg_scale, anchors, valid_mask). */
  hostValue(name: string): HostTensor {
    return this.ownTensor(name).value;
  }

  /** |up| and |reg_scale| as loaded, and W(n) from them. */
  fdrConstants(): { up: number; regScale: number; project: Float32Array } {
    const up = (this.hostValue('up').data as Float32Array)[0]!;
    const regScale = (this.hostValue('reg_scale').data as Float32Array)[0]!;
    return { up, regScale, project: weightingFunction(C.regMax, up, regScale) };
  }

  /**
   * Memory and query selection (3.3) for level grids `shapes`: anchors and valid mask from
   * `anchors`/`valid` (the loaded buffers in eval, regenerated for the input size in train).
   * `injected`: proposal indices [B, 300] to use instead of TopK.
   */
  selectQueries(b: GraphBuilder, feats: string[], shapes: ReadonlyArray<readonly [number, number]>, anchors: { anchors: ArrayLike<number>; valid: Uint8Array }, injected: string | null = null): QuerySelection {
    const d = this.cfg.decHidden;
    const total = shapes.reduce((a, [h, w]) => a + h * w, 0);
    const k = Math.min(C.numQueries, total);
    const projected = this.inputProj ? b.scope('input_proj', () => feats.map((f, l) => this.inputProj!.at(l).emit(b, f))) : feats;
    const memory = concat(b, projected.map((f, l) => b.op('Transpose', [reshape(b, f, [0, d, shapes[l]![0] * shapes[l]![1]])], { perm: { ints: [0, 2, 1] } })), 1);
    // Masked memory for scoring; the cross-attention later reads the unmasked one.
    const valid = anchors.valid;
    // A graph for any size masks even where every token is valid (x 1 is exact): 800 has invalid
    // tokens at stride 16, 640 none.
    const allValid = !b.anySize && valid.every((v) => v === 1);
    const masked = allValid ? memory : b.op('Mul', [memory, b.constant('valid', float32(Array.from(valid), [1, total, 1]))]);
    const outMem = this.encOutput.emit(b, masked);
    const encLogits = this.encScoreHead.emit(b, outMem);
    const maxLogit = b.op('ReduceMax', [encLogits], { axes: { ints: [-1] }, keepdims: i(0) });
    const topk = injected ?? b.opMulti('TopK', [maxLogit, b.constant('k', int64([k]))], 2, { axis: i(1), largest: i(1), sorted: i(1) })[1]!;
    const index = b.op('Unsqueeze', [topk, b.constant('axes', int64([-1]))]);
    const topMem = b.op('GatherND', [outMem, index], { batch_dims: i(1) });
    const topAnchors = b.op('Gather', [b.constant('anchors', { dtype: 'float32', dims: [total, 4], data: Float32Array.from(anchors.anchors) }), topk], { axis: i(0) });
    const unact = b.op('Add', [this.encBboxHead.emit(b, topMem), topAnchors]);
    return { memory, encLogits, maxLogit, topk, topMem, unact };
  }

  /**
   * The FDR loop (3.7) from initial content [B, Q, C] and reference logits [B, Q, 4]. Eval: every
   * layer refines, score head + LQE at the last only. Train (`train`): every layer's outputs, the
   * pre head, the original's gradient stops (ref, ref0, the previous output; not the corner
   * chain), and the self-attention `mask` (additive [Q, Q]).
   */
  refine(b: GraphBuilder, content: string, refUnact: string, memory: string, shapes: ReadonlyArray<readonly [number, number]>, queries: number, opts: { train: boolean; mask?: string }): Refinement {
    const { regScale, project } = this.fdrConstants();
    const stop = (v: string): string => (opts.train ? b.op('Identity', [v], {}, { name: 'StopGradient' }) : v);
    let ref = preciseSigmoid(b, refUnact);
    let out = content;
    let ref0 = '';
    let prevCorners: string | null = null;
    let prevOut: string | null = null;
    let pre: Refinement['pre'] = null;
    const layers: RefinedLayer[] = [];
    const last = this.cfg.decLayers - 1;
    b.scope('decoder', () => {
      for (let l = 0; l <= last; l++) {
        const pos = b.op('Clip', [this.queryPosHead.emit(b, ref), b.scalar(-10, 'lo'), b.scalar(10, 'hi')]);
        out = b.scope('layers', () => this.decoder.layers.at(l).emit(b, out, pos, ref, memory, shapes, queries, opts.mask));
        if (l === 0) {
          const preBoxes = preciseSigmoid(b, b.op('Add', [this.preBboxHead.emit(b, out), inverseSigmoid(b, ref)]));
          if (opts.train) pre = { logits: b.scope('dec_score_head', () => this.decScoreHead.at(0).emit(b, out)), boxes: preBoxes };
          ref0 = stop(preBoxes);
        }
        const headIn = prevOut ? b.op('Add', [out, prevOut]) : out;
        const head = b.scope('dec_bbox_head', () => this.decBboxHead.at(l).emit(b, headIn));
        const corners: string = prevCorners ? b.op('Add', [head, prevCorners]) : head;
        const box = distance2bbox(b, ref0, integral(b, corners, project), regScale);
        if (opts.train || l === last) {
          const scores = b.scope('dec_score_head', () => this.decScoreHead.at(l).emit(b, out));
          layers.push({ logits: b.scope('lqe_layers', () => this.decoder.lqeLayers.at(l).emit(b, scores, corners)), boxes: box, corners });
        }
        prevCorners = corners;
        prevOut = stop(out);
        ref = stop(box);
      }
    });
    return { layers, pre, ref0 };
  }

  /** Eval graph. feats: encoder outputs finest first. `injected`: proposal indices [B, 300] to use instead of TopK. */
  forward(b: GraphBuilder, feats: string[], injected: string | null = null): DecoderOutputs {
    const shapes = this.shapes;
    const total = shapes.reduce((a, [h, w]) => a + h * w, 0);
    const k = Math.min(C.numQueries, total);
    const loaded = { anchors: this.hostValue('anchors').data as Float32Array, valid: this.hostValue('valid_mask').data as Uint8Array };
    const q = this.selectQueries(b, feats, shapes, loaded, injected);
    const r = this.refine(b, q.topMem, q.unact, q.memory, shapes, k, { train: false });
    const lastLayer = r.layers[r.layers.length - 1]!;
    return { logits: lastLayer.logits, boxes: lastLayer.boxes, maxLogit: q.maxLogit, topk: q.topk };
  }
}
