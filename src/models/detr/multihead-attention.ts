/** torch.nn.MultiheadAttention as an emitting module (shared by the DETR families). */
import type { GraphBuilder } from '../../graph/builder.ts';
import { multiHeadAttention } from '../../graph/contrib.ts';
import { Linear } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { linear, matmul, slice, split, transpose } from '../../graph/nn.ts';
import { dotProductAttention } from './attention.ts';

/** torch.nn.MultiheadAttention's parameters (`in_proj_weight` rows Q, K, V; `out_proj`). */
export class MultiheadAttention extends Module {
  readonly outProj: Linear;
  constructor(readonly dim: number, readonly heads: number) {
    super();
    this.addParameter('in_proj_weight', [3 * dim, dim]);
    this.addParameter('in_proj_bias', [3 * dim]);
    this.outProj = this.addModule('out_proj', new Linear(dim, dim));
  }
  /**
   * Self-attention with q = k = `qk` and v = `v`; 1/sqrt(d) scales q, as torch does. `mask`: an
   * additive `[T, T]` mask (-inf = blocked), torch's boolean attn_mask after its conversion.
   */
  forward(b: GraphBuilder, qk: string, v: string, mask?: string): string {
    const d = this.dim;
    const w = this.use(b, 'in_proj_weight');
    const bias = this.use(b, 'in_proj_bias');
    const [q, k] = split(b, linear(b, qk, slice(b, w, 0, 0, 2 * d), slice(b, bias, 0, 0, 2 * d)), [d, d], -1) as [string, string];
    const vp = linear(b, v, slice(b, w, 0, 2 * d, 3 * d), slice(b, bias, 0, 2 * d, 3 * d));
    return this.outProj.emit(b, dotProductAttention(b, q, k, vp, { heads: this.heads, headDim: d / this.heads, scaleOn: 'query', ...(mask ? { mask } : {}) }));
  }
  /** The same on ORT's `MultiHeadAttention` (biases packed into it); returns out_proj(x) without its bias. */
  forwardFused(b: GraphBuilder, qk: string, v: string): { out: string; bias: string } {
    const d = this.dim;
    const w = this.use(b, 'in_proj_weight');
    const proj = (x: string, from: number): string => matmul(b, x, transpose(b, slice(b, w, 0, from, from + d), [1, 0]));
    const ctx = multiHeadAttention(b, proj(qk, 0), proj(qk, d), proj(v, 2 * d), this.use(b, 'in_proj_bias'), this.heads);
    const { weight, bias } = this.outProj.tensors(b);
    return { out: b.scope('out_proj', () => matmul(b, ctx, transpose(b, weight, [1, 0]))), bias: bias! };
  }
}
