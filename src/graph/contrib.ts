/**
 * Emitters for ONNX Runtime's fused contrib kernels (domain `com.microsoft`): packed-QKV
 * self-attention, multi-head attention, and bias + exact-erf GELU. Graphs that use them run on ONNX
 * Runtime only; each has a plain-ONNX equivalent the models emit instead when fusion is switched off.
 *
 * Residual + LayerNorm is not among them: ORT's CPU `SkipLayerNormalization` takes 2-5x the time
 * of the `Add` + `LayerNormalization` it replaces (ORT profile, 2026-12-07: RF-DETR-n's 30 at 384
 * 16.1 ms against 5.5 ms for the pair; D-FINE-n's 12 at 640 1.7 against 0.44 ms), so families with
 * such residuals emit the pair and set SKIP_LAYER_NORM_FUSION_OFF in their session config to keep
 * ORT's optimiser from fusing it back.
 */
import { i, type GraphBuilder } from './builder.ts';

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

/** ORT session config entry that keeps its optimiser from fusing `Add` + `LayerNormalization` (see above). */
export const SKIP_LAYER_NORM_FUSION_OFF: Readonly<Record<string, string>> = { 'optimization.disable_specified_optimizers': 'SkipLayerNormFusion' };

/** `BiasGelu`: exact-erf GELU of x + bias (ORT's erf, not the tanh `FastGelu`). */
export function biasGelu(b: GraphBuilder, x: string, bias: string): string {
  return contrib(b, 'BiasGelu', [x, bias], 1)[0]!;
}
