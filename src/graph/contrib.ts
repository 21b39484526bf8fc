/**
 * Emitters for ONNX Runtime's fused contrib kernels (domain `com.microsoft`): packed-QKV
 * self-attention, multi-head attention, residual + LayerNorm, and bias + exact-erf GELU. Graphs
 * that use them run on ONNX Runtime only; each has a plain-ONNX equivalent the models emit instead
 * when fusion is switched off.
 */
import { f, i, type GraphBuilder } from './builder.ts';

export const CONTRIB_DOMAIN = 'com.microsoft';

function contrib(b: GraphBuilder, op: string, inputs: string[], outputs: number, attrs: Parameters<GraphBuilder['opMulti']>[3] = {}): string[] {
  const outs = b.opMulti(op, inputs, outputs, attrs);
  b.graph.nodes[b.graph.nodes.length - 1]!.domain = CONTRIB_DOMAIN;
  return outs;
}

/**
 * `Attention`: x `[B, S, Din]` times the packed weight `[Din, 3*D]` (columns q | k | v) plus bias
 * `[3*D]`, softmax(q k^T / sqrt(D/heads)) v per head; output `[B, S, D]`.
 */
export function packedSelfAttention(b: GraphBuilder, x: string, weight: string, bias: string, heads: number): string {
  return contrib(b, 'Attention', [x, weight, bias], 1, { num_heads: i(heads) })[0]!;
}

/** `MultiHeadAttention` over projected q `[B, S, D]`, k and v `[B, L, D]`, with their biases packed `[3*D]`. */
export function multiHeadAttention(b: GraphBuilder, q: string, k: string, v: string, bias: string, heads: number): string {
  return contrib(b, 'MultiHeadAttention', [q, k, v, bias], 1, { num_heads: i(heads) })[0]!;
}

/**
 * `SkipLayerNormalization`: LayerNorm(x + skip + bias) over the last axis; also returns the sum
 * itself (the residual stream of a pre-norm block).
 */
export function skipLayerNorm(b: GraphBuilder, x: string, skip: string, gamma: string, beta: string, bias: string | null, eps: number): { normed: string; sum: string } {
  const outs = contrib(b, 'SkipLayerNormalization', bias ? [x, skip, gamma, beta, bias] : [x, skip, gamma, beta], 4, { epsilon: f(eps) });
  const node = b.graph.nodes[b.graph.nodes.length - 1]!;
  node.outputs[1] = '';
  node.outputs[2] = '';
  return { normed: outs[0]!, sum: outs[3]! };
}

/** `BiasGelu`: exact-erf GELU of x + bias (ORT's erf, not the tanh `FastGelu`). */
export function biasGelu(b: GraphBuilder, x: string, bias: string): string {
  return contrib(b, 'BiasGelu', [x, bias], 1)[0]!;
}
