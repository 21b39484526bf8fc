/**
 * Scaled dot-product multi-head attention over already-projected q, k, v `[B, T, heads*d]`, as the
 * plain ONNX decomposition (MatMul, Softmax, MatMul). Heads own contiguous channel blocks
 * (channel = head*d + j), as torch's attention modules lay them out.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { matmul, reshape, softmax, transpose } from '../../graph/nn.ts';

export interface AttentionSpec {
  heads: number;
  headDim: number;
  /**
   * Where 1/sqrt(d) is applied: on the scores after q.k (HF ViTs, `scores / sqrt(d)`) or on q
   * before the product (torch.nn.MultiheadAttention). The two round differently in float32.
   */
  scaleOn: 'scores' | 'query';
  /** Additive mask `[Tq, Tk]` (0 = attend, -inf = blocked) added to the scores before the softmax, as torch's attn_mask. */
  mask?: string;
}

export function dotProductAttention(b: GraphBuilder, q: string, k: string, v: string, spec: AttentionSpec): string {
  const { heads, headDim } = spec;
  const split = (x: string): string => reshape(b, x, [0, 0, heads, headDim]);
  let qh = transpose(b, split(q), [0, 2, 1, 3]);
  const kt = transpose(b, split(k), [0, 2, 3, 1]);
  const vh = transpose(b, split(v), [0, 2, 1, 3]);
  if (spec.scaleOn === 'query') qh = b.op('Mul', [qh, b.scalar(1 / Math.sqrt(headDim), 'scale')]);
  let scores = matmul(b, qh, kt);
  if (spec.scaleOn === 'scores') scores = b.op('Div', [scores, b.scalar(Math.sqrt(headDim), 'sqrt_d')]);
  if (spec.mask) scores = b.op('Add', [scores, spec.mask]);
  const ctx = matmul(b, softmax(b, scores, -1), vh);
  return reshape(b, transpose(b, ctx, [0, 2, 1, 3]), [0, 0, heads * headDim]);
}
