/** Emitters for the tensor ops the models use (thin, typed wrappers over GraphBuilder.op). */
import { f, i, ints, s, type GraphBuilder } from './builder.ts';
import type { HostTensor } from './tensor.ts';

export interface ConvSpec {
  kernel: number;
  stride?: number;
  pad?: number;
  groups?: number;
}

export function conv2d(b: GraphBuilder, x: string, w: string, bias: string | null, spec: ConvSpec, name = 'Conv'): string {
  const { kernel: k, stride = 1, pad = (spec.kernel - 1) >> 1, groups = 1 } = spec;
  return b.op('Conv', bias ? [x, w, bias] : [x, w], {
    kernel_shape: ints([k, k]), strides: ints([stride, stride]), pads: ints([pad, pad, pad, pad]),
    group: i(groups), dilations: ints([1, 1]),
  }, { name });
}

export function batchNorm(b: GraphBuilder, x: string, scale: string, bias: string, mean: string, variance: string, eps: number, name = 'BatchNormalization'): string {
  return b.op('BatchNormalization', [x, scale, bias, mean, variance], { epsilon: f(eps), momentum: f(0.97) }, { name });
}

/**
 * Training-mode BatchNorm (batch statistics over N,H,W) as one composite node `BatchNormTrain`
 * (outputs y, batch mean, biased batch variance, each stat `[1,C,1,1]`). The autodiff pass uses its
 * closed-form gradient; `lowerComposites` expands it into ONNX primitives before a session is made.
 * Returns y and the updated running stats (running = (1 - m) * running + m * batch, unbiased
 * batch variance, as PyTorch).
 */
export function batchNormTrain(
  b: GraphBuilder, x: string, scale: string, bias: string, runningMean: string, runningVar: string,
  opts: { eps: number; momentum: number; channels: number; preciseStats?: boolean },
): { y: string; mean: string; variance: string } {
  const c = opts.channels;
  const [y, mean, variance] = b.opMulti('BatchNormTrain', [x, scale, bias], 3, {
    epsilon: f(opts.eps), precise_stats: i(opts.preciseStats === false ? 0 : 1), channels: i(c),
  }, { name: 'bn/BatchNormTrain' }) as [string, string, string];
  b.graph.nodes[b.graph.nodes.length - 1]!.domain = COMPOSITE_DOMAIN;
  const m = opts.momentum;
  const stop = (v: string): string => b.op('Identity', [v], {}, { name: 'bn/StopGradient' });
  // Unbiased variance for the running estimate: n / (n - 1) with n = N*H*W = size(x) / C.
  const n = b.op('Div', [b.op('Cast', [b.op('Size', [x])], { to: i(1) }), b.scalar(c)]);
  const unbiased = b.op('Div', [n, b.op('Max', [b.op('Sub', [n, b.scalar(1)]), b.scalar(1)])]);
  const newMean = b.op('Add', [b.op('Mul', [runningMean, b.scalar(1 - m)]), b.op('Mul', [reshape(b, stop(mean), [c]), b.scalar(m)])], {}, { name: 'bn/RunningMean' });
  const batchVar = b.op('Mul', [reshape(b, stop(variance), [c]), unbiased]);
  const newVar = b.op('Add', [b.op('Mul', [runningVar, b.scalar(1 - m)]), b.op('Mul', [batchVar, b.scalar(m)])], {}, { name: 'bn/RunningVar' });
  return { y, mean: newMean, variance: newVar };
}

/** Domain of the package's composite ops (never serialised: lowered to ONNX primitives first). */
export const COMPOSITE_DOMAIN = 'libreyolo.composite';

/** SiLU as x * sigmoid(x): ORT fuses the pair, and the autodiff pass only needs the two rules. */
export function silu(b: GraphBuilder, x: string): string {
  return b.op('Mul', [x, b.preciseSilu ? stableSigmoid(b, x) : b.op('Sigmoid', [x])]);
}

/**
 * sigmoid(x) as 1 / (1 + e) for x >= 0 and e / (1 + e) below, with e = exp(-|x|) in (0, 1]: as
 * exact as `preciseSigmoid`, and nothing overflows in its gradient either (1 / (1 + exp(-x)) has
 * exp(-x) = inf below x = -88, where the backward pass computes 0 * inf).
 */
export function stableSigmoid(b: GraphBuilder, x: string): string {
  const e = b.op('Exp', [b.op('Neg', [b.op('Abs', [x])])]);
  const r = b.op('Reciprocal', [b.op('Add', [e, b.scalar(1, 'one')])]);
  return b.op('Where', [b.op('GreaterOrEqual', [x, b.scalar(0, 'zero')]), r, b.op('Mul', [e, r])]);
}

/**
 * sigmoid(x) as 1 / (1 + exp(-x)), accurate to a few ulps everywhere. ONNX Runtime's CPU Sigmoid
 * is an approximation with ~1e-7 absolute error: harmless next to values near 1 (SiLU), but its
 * relative error is ~3e-4 rms for x in [-10, -8], ~3% for [-15, -10], and it has no correct digit
 * below -15, where an untrained head's class logits sit. The assigner (p^0.5 in the alignment) and
 * the BCE gradient need the relative accuracy.
 */
export function preciseSigmoid(b: GraphBuilder, x: string): string {
  return b.op('Reciprocal', [b.op('Add', [b.op('Exp', [b.op('Neg', [x])]), b.scalar(1, 'one')])]);
}

export function concat(b: GraphBuilder, xs: string[], axis: number): string {
  return b.op('Concat', xs, { axis: i(axis) });
}

export function int64(values: number[], dims = [values.length]): HostTensor {
  return { dtype: 'int64', dims, data: BigInt64Array.from(values.map((v) => BigInt(v))) };
}

export function float32(values: ArrayLike<number>, dims: number[]): HostTensor {
  return { dtype: 'float32', dims, data: Float32Array.from(values) };
}

/** Splits `x` along `axis` into parts of the given sizes. */
export function split(b: GraphBuilder, x: string, sizes: number[], axis: number): string[] {
  return b.opMulti('Split', [x, b.constant('split', int64(sizes))], sizes.length, { axis: i(axis) });
}

export function maxPool(b: GraphBuilder, x: string, k: number, stride: number, pad: number): string {
  return b.op('MaxPool', [x], { kernel_shape: ints([k, k]), strides: ints([stride, stride]), pads: ints([pad, pad, pad, pad]) });
}

export function avgPool(b: GraphBuilder, x: string, k: number, stride: number, pad: number): string {
  return b.op('AveragePool', [x], {
    kernel_shape: ints([k, k]), strides: ints([stride, stride]), pads: ints([pad, pad, pad, pad]), count_include_pad: i(1),
  });
}

/** Nearest-neighbour x2 upsampling with torch's index rule (floor of dst/2). */
export function upsample2x(b: GraphBuilder, x: string): string {
  return b.op('Resize', [x, '', b.constant('scales', float32([1, 1, 2, 2], [4]))], {
    mode: s('nearest'), coordinate_transformation_mode: s('asymmetric'), nearest_mode: s('floor'),
  });
}

export function reshape(b: GraphBuilder, x: string, shape: number[]): string {
  return b.op('Reshape', [x, b.constant('shape', int64(shape))]);
}

export function transpose(b: GraphBuilder, x: string, perm: number[]): string {
  return b.op('Transpose', [x], { perm: ints(perm) });
}

export function matmul(b: GraphBuilder, x: string, y: string, name = 'MatMul'): string {
  return b.op('MatMul', [x, y], {}, { name });
}

/**
 * torch.nn.Linear on the last axis: x @ W^T + bias. The weight stays the stored [out, in] tensor
 * (its state_dict value, so gradients and checkpoints see it as is); ORT folds the Transpose once.
 */
export function linear(b: GraphBuilder, x: string, weight: string, bias: string | null): string {
  const y = matmul(b, x, transpose(b, weight, [1, 0]));
  return bias ? b.op('Add', [y, bias]) : y;
}

/** LayerNormalization over the last axis (opset 17). */
export function layerNorm(b: GraphBuilder, x: string, scale: string, bias: string, eps: number): string {
  return b.op('LayerNormalization', [x, scale, bias], { axis: i(-1), epsilon: f(eps) });
}

/**
 * A residual and its LayerNorm: `sum` = x + bias + skip (bias, e.g. a projection's folded bias, may
 * be null) and `normed` = LayerNorm(sum) over the last axis.
 */
export function residualLayerNorm(b: GraphBuilder, x: string, skip: string, scale: string, shift: string, bias: string | null, eps: number): { normed: string; sum: string } {
  const sum = b.op('Add', [bias ? b.op('Add', [x, bias]) : x, skip]);
  return { normed: layerNorm(b, sum, scale, shift, eps), sum };
}

/** Exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)) (torch's default; the tanh form differs by ~1e-3). */
export function erfGelu(b: GraphBuilder, x: string): string {
  const e = b.op('Erf', [b.op('Mul', [x, b.scalar(Math.SQRT1_2, 'rsqrt2')])]);
  return b.op('Mul', [b.op('Mul', [x, b.scalar(0.5, 'half')]), b.op('Add', [e, b.scalar(1, 'one')])], {}, { name: 'Gelu' });
}

export function softmax(b: GraphBuilder, x: string, axis = -1): string {
  return b.op('Softmax', [x], { axis: i(axis) });
}

/** `x[..., start:end]` along one axis (static bounds). */
export function slice(b: GraphBuilder, x: string, axis: number, start: number, end: number): string {
  return b.op('Slice', [x, b.constant('starts', int64([start])), b.constant('ends', int64([end])), b.constant('axes', int64([axis]))]);
}
