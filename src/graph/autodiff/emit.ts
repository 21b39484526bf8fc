/** Small emitters the gradient rules share (opset 17 forms: ReduceSum axes as an input, ReduceMean/Max as attributes). */
import { i, ints, type GraphBuilder } from '../builder.ts';
import { int64 } from '../nn.ts';

export function reduceSum(b: GraphBuilder, x: string, axes: number[], keepdims: boolean): string {
  return b.op('ReduceSum', [x, b.constant('axes', int64(axes))], { keepdims: i(keepdims ? 1 : 0) });
}

export function reshapeTo(b: GraphBuilder, x: string, dims: number[]): string {
  return b.op('Reshape', [x, b.constant('shape', int64(dims))]);
}

export function transpose(b: GraphBuilder, x: string, perm: number[]): string {
  return b.op('Transpose', [x], { perm: ints(perm) });
}

/** A zero tensor of `dims` without storing it (a scalar expanded at run time). */
export function zerosOf(b: GraphBuilder, dims: number[]): string {
  return b.op('Expand', [b.scalar(0, 'zero'), b.constant('shape', int64(dims))]);
}

/** Sums `g` (shaped `gDims`) down to `xDims` under numpy broadcasting rules. */
export function unbroadcast(b: GraphBuilder, g: string, gDims: number[], xDims: number[]): string {
  if (gDims.length === xDims.length && gDims.every((d, k) => d === xDims[k])) return g;
  const lead = gDims.length - xDims.length;
  const axes: number[] = [];
  for (let k = 0; k < gDims.length; k++) {
    if (k < lead) axes.push(k);
    else if (xDims[k - lead] === 1 && gDims[k] !== 1) axes.push(k);
  }
  const summed = axes.length ? reduceSum(b, g, axes, true) : g;
  return reshapeTo(b, summed, xDims);
}
