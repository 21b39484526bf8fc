/**
 * The LW-DETR decoder (keys `transformer.decoder.*`): post-norm layers of
 * self-attention (q = k = tgt + pos, v = tgt), multi-scale deformable cross-attention on the raw
 * projector memory and a ReLU FFN; with `lite_refpoint_refine` every layer uses the same reference
 * boxes and one query positional embedding computed from them.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { LayerNorm, Linear, ModuleList } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { matmul, reshape, residualLayerNorm, transpose } from '../../graph/nn.ts';
import { MSDeformAttn } from '../detr/deformable-attention.ts';
import { MultiheadAttention } from '../detr/multihead-attention.ts';
import { MLP } from '../detr/mlp.ts';
import { boxSineEmbedding } from '../detr/sine-embed.ts';
import { RFDETR_COMMON as C } from './config.ts';

export class DecoderLayer extends Module {
  readonly selfAttn: MultiheadAttention;
  readonly norm1: LayerNorm;
  readonly crossAttn: MSDeformAttn;
  readonly linear1: Linear;
  readonly linear2: Linear;
  readonly norm2: LayerNorm;
  readonly norm3: LayerNorm;
  constructor() {
    super();
    const d = C.hiddenDim;
    this.selfAttn = this.addModule('self_attn', new MultiheadAttention(d, C.saHeads));
    this.norm1 = this.addModule('norm1', new LayerNorm(d, C.decEps));
    this.crossAttn = this.addModule('cross_attn', new MSDeformAttn({ dModel: d, heads: C.caHeads, levels: 1, points: C.decPoints }));
    this.linear1 = this.addModule('linear1', new Linear(d, C.dimFeedforward));
    this.linear2 = this.addModule('linear2', new Linear(C.dimFeedforward, d));
    this.norm2 = this.addModule('norm2', new LayerNorm(d, C.decEps));
    this.norm3 = this.addModule('norm3', new LayerNorm(d, C.decEps));
  }

  /**
   * With `groups` > 1 (train mode's 13 query groups) self-attention stays inside each group: the
   * `queries` are cut into equal chunks stacked on the batch axis for it, and restored after.
   */
  forward(b: GraphBuilder, tgt: string, pos: string, ref: string, memory: string, shapes: ReadonlyArray<readonly [number, number]>, queries: number, fused = false, groups = 1): string {
    if (fused && groups === 1) return this.forwardFused(b, tgt, pos, ref, memory, shapes, queries);
    const qk = b.op('Add', [tgt, pos]);
    const d = C.hiddenDim;
    const chunk = (x: string): string => (groups === 1 ? x : reshape(b, x, [-1, queries / groups, d]));
    const sa = this.selfAttn.emit(b, chunk(qk), chunk(tgt));
    let t = this.norm1.emit(b, b.op('Add', [tgt, groups === 1 ? sa : reshape(b, sa, [-1, queries, d])]));
    const ca = this.crossAttn.emit(b, b.op('Add', [t, pos]), ref, memory, shapes, queries);
    t = this.norm2.emit(b, b.op('Add', [t, ca]));
    const ffn = b.scope('ffn', () => this.linear2.emit(b, b.op('Relu', [this.linear1.emit(b, t)])));
    return this.norm3.emit(b, b.op('Add', [t, ffn]));
  }

  /** Post-norm residuals with the projection biases folded into their sums, `MultiHeadAttention`. */
  private forwardFused(b: GraphBuilder, tgt: string, pos: string, ref: string, memory: string, shapes: ReadonlyArray<readonly [number, number]>, queries: number): string {
    const residualNorm = (x: { out: string; bias: string }, skip: string, norm: LayerNorm): string => b.scope(norm.path.split('.').pop()!, () => {
      const n = norm.tensors(b);
      return residualLayerNorm(b, x.out, skip, n.weight, n.bias, x.bias, norm.eps).normed;
    });
    const sa = b.scope('self_attn', () => this.selfAttn.forwardFused(b, b.op('Add', [tgt, pos]), tgt));
    let t = residualNorm(sa, tgt, this.norm1);
    const ca = this.crossAttn.emit(b, b.op('Add', [t, pos]), ref, memory, shapes, queries);
    t = this.norm2.emit(b, b.op('Add', [t, ca]));
    const ffn = b.scope('ffn', () => {
      const l2 = this.linear2.tensors(b);
      return { out: matmul(b, b.op('Relu', [this.linear1.emit(b, t)]), transpose(b, l2.weight, [1, 0])), bias: l2.bias! };
    });
    return residualNorm(ffn, t, this.norm3);
  }
}

export class TransformerDecoder extends Module {
  readonly layers: ModuleList<DecoderLayer>;
  readonly norm: LayerNorm;
  readonly refPointHead: MLP;
  constructor(numLayers: number) {
    super();
    const d = C.hiddenDim;
    this.layers = this.addModule('layers', new ModuleList(Array.from({ length: numLayers }, () => new DecoderLayer())));
    this.norm = this.addModule('norm', new LayerNorm(d, C.decEps));
    this.refPointHead = this.addModule('ref_point_head', new MLP(2 * d, d, d, 2));
  }

  /**
   * Returns each layer's normed output `hs_l` (only those in `wanted`; the last is always made);
   * `groups` restricts self-attention to equal query groups (DecoderLayer.forward).
   */
  forward(b: GraphBuilder, tgt: string, ref: string, memory: string, shapes: ReadonlyArray<readonly [number, number]>, queries: number, wanted: ReadonlySet<number>, fused = false, groups = 1): Map<number, string> {
    const pos = this.refPointHead.emit(b, boxSineEmbedding(b, ref, C.hiddenDim / 2));
    const out = new Map<number, string>();
    const last = this.layers.items.length - 1;
    let t = tgt;
    b.scope('layers', () => this.layers.items.forEach((layer, l) => {
      t = layer.emit(b, t, pos, ref, memory, shapes, queries, fused, groups);
      if (l === last || wanted.has(l)) out.set(l, b.scope(`hs${l}`, () => this.norm.forward(b, t)));
    }));
    return out;
  }
}
