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

/** SiLU as x * sigmoid(x): ORT fuses the pair, and the autodiff pass only needs the two rules. */
export function silu(b: GraphBuilder, x: string): string {
  return b.op('Mul', [x, b.op('Sigmoid', [x])]);
}

export function concat(b: GraphBuilder, xs: string[], axis: number): string {
  return b.op('Concat', xs, { axis: i(axis) });
}

export function int64(values: number[], dims = [values.length]): HostTensor {
  return { dtype: 'int64', dims, data: BigInt64Array.from(values.map((v) => BigInt(v))) };
}

export function float32(values: number[] | Float32Array, dims: number[]): HostTensor {
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
