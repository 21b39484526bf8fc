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
  const summed = axes.length ? reduceSumStaged(b, g, axes, gDims) : g;
  return reshapeTo(b, summed, xDims);
}

/** Below this many summed elements one ReduceSum is as accurate as staging. */
const STAGED_SUM_MIN = 4096;

/**
 * Sum over `axes` (kept as size 1) one axis at a time, innermost first. ONNX Runtime's single
 * ReduceSum over several axes accumulates with an error near 1.5e-8 of the sum of magnitudes; a
 * broadcast parameter's gradient (a LearnableAffineBlock's scalar bias: 819,200 terms whose sum is
 * 7,500x smaller than their magnitudes) lost 2e-4 to 5e-4 of 4.5 that way, about 1e-6 staged
 * (docs/training-numerics.md, D-FINE gradients).
 */
export function reduceSumStaged(b: GraphBuilder, x: string, axes: number[], xDims: number[]): string {
  const count = axes.reduce((n, a) => n * xDims[a]!, 1);
  // A graph for any size stages every sum over several axes: the count changes with the size.
  if (axes.length < 2 || (!b.anySize && count < STAGED_SUM_MIN)) return reduceSum(b, x, axes, true);
  return [...axes].sort((p, q) => q - p).reduce((y, a) => reduceSum(b, y, [a], true), x);
}

/**
 * A copy of `x` (static dims `xDims`) that ONNX Runtime can only compute once every value of
 * `deps` exists: `x` concatenated on axis 0 with an empty slice of each. ORT runs nodes in a
 * depth-first order from the graph's leaves (graph/passes/exec-order.ts), so a gradient nothing
 * else reads (a weight gradient, a graph output) can run long after the values it reads stopped
 * being needed elsewhere, which keeps them alive; reading it here ties it into the chain. Exact:
 * the copy is `x`, and the cost is one copy of `x` (a weight, not an activation).
 */
export function after(b: GraphBuilder, x: string, xDims: number[], deps: string[]): string {
  const empties = deps.map((d) => {
    const none = b.op('Slice', [b.op('Reshape', [d, b.constant('shape', int64([-1]))]), b.constant('starts', int64([0])), b.constant('ends', int64([0])), b.constant('axes', int64([0]))]);
    return b.op('Reshape', [none, b.constant('shape', int64([0, ...xDims.slice(1)]))], { allowzero: i(1) });
  });
  return b.op('Concat', [x, ...empties], { axis: i(0) });
}
