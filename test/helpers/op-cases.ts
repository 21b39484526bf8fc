/**
 * One small graph per op kind the package's graphs use, with inputs chosen inside each op's smooth
 * domain. The autodiff rules are checked on them by finite differences, and the float64 reference
 * interpreter against ONNX Runtime.
 */
import { f, i, ints, s, type GraphBuilder } from '../../src/graph/builder.ts';
import { batchNormTrain, int64, float32 } from '../../src/graph/nn.ts';
import type { GradInput } from './gradcheck.ts';

export type OpCase = { op: string; name: string; inputs: GradInput[]; emit: (b: GraphBuilder, xs: string[]) => string; eps?: number };

const positive = (n: number, lo = 0.5): Float32Array => Float32Array.from({ length: n }, (_, k) => lo + ((k * 7919) % 97) / 97);
const idx = (b: GraphBuilder, values: number[], dims: number[]): string => b.constant('idx', int64(values, dims));
/** Rows with exact ties (the max/min of each row of 4 appears twice in rows 0 and 2). */
const tied = Float32Array.from([0.3, -0.2, 0.3, 0.1, -0.5, 0.9, 0.2, -0.1, -0.4, 0.6, -0.4, 0.6]);
/** A sampling grid [2, 4, 3, 2] spread over [-1.3, 1.3] (some samples fall off the map), with samples 0-2 of image 0 identical. */
const gridData = (): Float32Array => {
  const g = Float32Array.from({ length: 48 }, (_, k) => (((k * 7919) % 101) / 101) * 2.6 - 1.3);
  for (let q = 1; q < 3; q++) g.set(g.subarray(0, 2), q * 2);
  return g;
};
const gridSample = (align: number) => (b: GraphBuilder, [x, g]: string[]): string =>
  b.op('GridSample', [x!, g!], { mode: s('bilinear'), padding_mode: s('zeros'), align_corners: i(align) });

export const OP_CASES: OpCase[] = [
  { op: 'Add', name: 'broadcast', inputs: [{ name: 'a', dims: [2, 3, 4] }, { name: 'b', dims: [3, 1] }], emit: (b, [x, y]) => b.op('Add', [x!, y!]) },
  { op: 'Sum', name: 'three inputs', inputs: [{ name: 'a', dims: [2, 3] }, { name: 'b', dims: [2, 3] }, { name: 'c', dims: [3] }], emit: (b, xs) => b.op('Sum', xs) },
  { op: 'Sub', name: 'broadcast', inputs: [{ name: 'a', dims: [2, 3] }, { name: 'b', dims: [1, 3] }], emit: (b, [x, y]) => b.op('Sub', [x!, y!]) },
  { op: 'Mul', name: 'broadcast', inputs: [{ name: 'a', dims: [2, 3, 4] }, { name: 'b', dims: [1, 3, 1] }], emit: (b, [x, y]) => b.op('Mul', [x!, y!]) },
  { op: 'Div', name: 'broadcast', inputs: [{ name: 'a', dims: [2, 3] }, { name: 'b', dims: [3], data: positive(3) }], emit: (b, [x, y]) => b.op('Div', [x!, y!]) },
  { op: 'Neg', name: 'plain', inputs: [{ name: 'a', dims: [5] }], emit: (b, [x]) => b.op('Neg', [x!]) },
  { op: 'Identity', name: 'plain', inputs: [{ name: 'a', dims: [5] }], emit: (b, [x]) => b.op('Identity', [x!]) },
  { op: 'Max', name: 'elementwise', inputs: [{ name: 'a', dims: [6] }, { name: 'b', dims: [6] }], emit: (b, [x, y]) => b.op('Max', [x!, y!]) },
  { op: 'Min', name: 'elementwise', inputs: [{ name: 'a', dims: [6] }, { name: 'b', dims: [6] }], emit: (b, [x, y]) => b.op('Min', [x!, y!]) },
  { op: 'Clip', name: 'both bounds', inputs: [{ name: 'a', dims: [10] }], emit: (b, [x]) => b.op('Clip', [x!, b.scalar(-0.5), b.scalar(0.5)]) },
  { op: 'Relu', name: 'plain', inputs: [{ name: 'a', dims: [10] }], emit: (b, [x]) => b.op('Relu', [x!]) },
  { op: 'Abs', name: 'plain', inputs: [{ name: 'a', dims: [10] }], emit: (b, [x]) => b.op('Abs', [x!]) },
  { op: 'Sigmoid', name: 'plain', inputs: [{ name: 'a', dims: [10] }], emit: (b, [x]) => b.op('Sigmoid', [x!]) },
  { op: 'Exp', name: 'plain', inputs: [{ name: 'a', dims: [10] }], emit: (b, [x]) => b.op('Exp', [x!]) },
  { op: 'Log', name: 'positive', inputs: [{ name: 'a', dims: [10], data: positive(10) }], emit: (b, [x]) => b.op('Log', [x!]) },
  { op: 'Sqrt', name: 'positive', inputs: [{ name: 'a', dims: [10], data: positive(10) }], emit: (b, [x]) => b.op('Sqrt', [x!]) },
  { op: 'Reciprocal', name: 'positive', inputs: [{ name: 'a', dims: [10], data: positive(10) }], emit: (b, [x]) => b.op('Reciprocal', [x!]) },
  { op: 'Softplus', name: 'plain', inputs: [{ name: 'a', dims: [10] }], emit: (b, [x]) => b.op('Softplus', [x!]) },
  { op: 'Atan', name: 'plain', inputs: [{ name: 'a', dims: [10] }], emit: (b, [x]) => b.op('Atan', [x!]) },
  { op: 'Pow', name: 'scalar exponent', inputs: [{ name: 'a', dims: [8], data: positive(8) }], emit: (b, [x]) => b.op('Pow', [x!, b.scalar(6)]) },
  { op: 'Cast', name: 'float to float', inputs: [{ name: 'a', dims: [4] }], emit: (b, [x]) => b.op('Cast', [x!], { to: i(1) }) },
  { op: 'Reshape', name: 'plain', inputs: [{ name: 'a', dims: [2, 6] }], emit: (b, [x]) => b.op('Reshape', [x!, b.constant('s', int64([3, 4]))]) },
  { op: 'Flatten', name: 'plain', inputs: [{ name: 'a', dims: [2, 3, 2] }], emit: (b, [x]) => b.op('Flatten', [x!], { axis: i(1) }) },
  { op: 'Squeeze', name: 'plain', inputs: [{ name: 'a', dims: [2, 1, 3] }], emit: (b, [x]) => b.op('Squeeze', [x!, b.constant('ax', int64([1]))]) },
  { op: 'Unsqueeze', name: 'plain', inputs: [{ name: 'a', dims: [2, 3] }], emit: (b, [x]) => b.op('Unsqueeze', [x!, b.constant('ax', int64([1]))]) },
  { op: 'Transpose', name: 'perm', inputs: [{ name: 'a', dims: [2, 3, 4] }], emit: (b, [x]) => b.op('Transpose', [x!], { perm: ints([2, 0, 1]) }) },
  { op: 'Expand', name: 'broadcast', inputs: [{ name: 'a', dims: [3, 1] }], emit: (b, [x]) => b.op('Expand', [x!, b.constant('s', int64([2, 3, 4]))]) },
  { op: 'Concat', name: 'axis 1', inputs: [{ name: 'a', dims: [2, 2, 3] }, { name: 'b', dims: [2, 4, 3] }], emit: (b, xs) => b.op('Concat', xs, { axis: i(1) }) },
  { op: 'Split', name: 'one output unused', inputs: [{ name: 'a', dims: [2, 6] }], emit: (b, [x]) => b.opMulti('Split', [x!, b.constant('s', int64([2, 4]))], 2, { axis: i(1) })[1]! },
  { op: 'Where', name: 'mask', inputs: [{ name: 'a', dims: [6] }, { name: 'b', dims: [6] }], emit: (b, [x, y]) => b.op('Where', [b.op('Greater', [x!, y!]), x!, y!]) },
  // A reduction's gradient spread back over a broadcast product (RF-DETR's deformable-attention sum), broadcast on a kept and on the summed axis.
  { op: 'ReduceSum', name: 'of a broadcast product', inputs: [{ name: 'a', dims: [2, 3, 4, 5] }, { name: 'b', dims: [2, 1, 4, 5] }], emit: (b, [x, y]) => b.op('ReduceSum', [b.op('Mul', [x!, y!]), b.constant('ax', int64([-1]))], { keepdims: i(0) }) },
  { op: 'ReduceSum', name: 'of a product broadcast on the summed axis', inputs: [{ name: 'a', dims: [2, 3, 4, 5] }, { name: 'b', dims: [2, 3, 4, 1] }], emit: (b, [x, y]) => b.op('ReduceSum', [b.op('Mul', [x!, y!]), b.constant('ax', int64([-1]))], { keepdims: i(0) }) },
  { op: 'ReduceSum', name: 'keepdims 0', inputs: [{ name: 'a', dims: [2, 3, 4] }], emit: (b, [x]) => b.op('ReduceSum', [x!, b.constant('ax', int64([1]))], { keepdims: i(0) }) },
  { op: 'ReduceMean', name: 'keepdims 1', inputs: [{ name: 'a', dims: [2, 3, 4] }], emit: (b, [x]) => b.op('ReduceMean', [x!], { axes: ints([0, 2]), keepdims: i(1) }) },
  { op: 'Softmax', name: 'middle axis', inputs: [{ name: 'a', dims: [2, 5, 3] }], emit: (b, [x]) => b.op('Softmax', [x!], { axis: i(1) }) },
  { op: 'LogSoftmax', name: 'middle axis', inputs: [{ name: 'a', dims: [2, 5, 3] }], emit: (b, [x]) => b.op('LogSoftmax', [x!], { axis: i(1) }) },
  { op: 'MatMul', name: 'batched with broadcast', inputs: [{ name: 'a', dims: [2, 3, 4] }, { name: 'b', dims: [4, 5] }], emit: (b, [x, y]) => b.op('MatMul', [x!, y!]) },
  { op: 'Conv', name: '3x3 stride 2 with bias', inputs: [{ name: 'x', dims: [2, 3, 8, 8] }, { name: 'w', dims: [4, 3, 3, 3] }, { name: 'bias', dims: [4] }], emit: (b, xs) => b.op('Conv', xs, { kernel_shape: ints([3, 3]), strides: ints([2, 2]), pads: ints([1, 1, 1, 1]) }) },
  { op: 'Conv', name: '3x3 im2col weight gradient (16 channels)', inputs: [{ name: 'x', dims: [2, 16, 6, 6] }, { name: 'w', dims: [4, 16, 3, 3] }], emit: (b, xs) => b.op('Conv', xs, { kernel_shape: ints([3, 3]), pads: ints([1, 1, 1, 1]) }) },
  { op: 'Conv', name: '3x3 stride 2 im2col weight gradient (32 channels)', inputs: [{ name: 'x', dims: [1, 32, 6, 6] }, { name: 'w', dims: [3, 32, 3, 3] }, { name: 'bias', dims: [3] }], emit: (b, xs) => b.op('Conv', xs, { kernel_shape: ints([3, 3]), strides: ints([2, 2]), pads: ints([1, 1, 1, 1]) }) },
  { op: 'Conv', name: '1x1 as MatMul', inputs: [{ name: 'x', dims: [2, 4, 5, 5] }, { name: 'w', dims: [6, 4, 1, 1] }], emit: (b, xs) => b.op('Conv', xs, { kernel_shape: ints([1, 1]) }) },
  { op: 'Conv', name: 'grouped 3x3', inputs: [{ name: 'x', dims: [2, 8, 6, 6] }, { name: 'w', dims: [8, 2, 3, 3] }], emit: (b, xs) => b.op('Conv', xs, { kernel_shape: ints([3, 3]), pads: ints([1, 1, 1, 1]), group: i(4) }) },
  { op: 'Conv', name: 'depthwise 3x3 stride 1', inputs: [{ name: 'x', dims: [2, 6, 6, 6] }, { name: 'w', dims: [6, 1, 3, 3] }], emit: (b, xs) => b.op('Conv', xs, { kernel_shape: ints([3, 3]), pads: ints([1, 1, 1, 1]), group: i(6) }) },
  { op: 'Conv', name: '2x3 kernel, uneven pads, stride 1', inputs: [{ name: 'x', dims: [1, 3, 5, 7] }, { name: 'w', dims: [4, 3, 2, 3] }, { name: 'bias', dims: [4] }], emit: (b, xs) => b.op('Conv', xs, { kernel_shape: ints([2, 3]), pads: ints([1, 2, 0, 1]) }) },
  { op: 'Conv', name: 'grouped 1x1 with bias', inputs: [{ name: 'x', dims: [2, 8, 4, 4] }, { name: 'w', dims: [8, 2, 1, 1] }, { name: 'bias', dims: [8] }], emit: (b, xs) => b.op('Conv', xs, { kernel_shape: ints([1, 1]), group: i(4) }) },
  { op: 'MaxPool', name: 'overlapping 5x5', inputs: [{ name: 'x', dims: [2, 3, 6, 6] }], emit: (b, [x]) => b.op('MaxPool', [x!], { kernel_shape: ints([5, 5]), pads: ints([2, 2, 2, 2]), strides: ints([1, 1]) }) },
  { op: 'MaxPool', name: '3x3 stride 2', inputs: [{ name: 'x', dims: [1, 2, 8, 8] }], emit: (b, [x]) => b.op('MaxPool', [x!], { kernel_shape: ints([3, 3]), pads: ints([1, 1, 1, 1]), strides: ints([2, 2]) }) },
  { op: 'AveragePool', name: '2x2 stride 1', inputs: [{ name: 'x', dims: [2, 3, 5, 5] }], emit: (b, [x]) => b.op('AveragePool', [x!], { kernel_shape: ints([2, 2]), strides: ints([1, 1]), pads: ints([0, 0, 0, 0]), count_include_pad: i(1) }) },
  { op: 'Resize', name: 'nearest x2', inputs: [{ name: 'x', dims: [1, 2, 3, 4] }], emit: (b, [x]) => b.op('Resize', [x!, '', b.constant('sc', float32([1, 1, 2, 2], [4]))], { mode: s('nearest'), coordinate_transformation_mode: s('asymmetric'), nearest_mode: s('floor') }) },
  { op: 'Erf', name: 'plain', inputs: [{ name: 'a', dims: [10] }], emit: (b, [x]) => b.op('Erf', [b.op('Mul', [x!, b.scalar(2)])]) },
  { op: 'Sin', name: 'plain', inputs: [{ name: 'a', dims: [10] }], emit: (b, [x]) => b.op('Sin', [b.op('Mul', [x!, b.scalar(3)])]) },
  { op: 'Cos', name: 'plain', inputs: [{ name: 'a', dims: [10] }], emit: (b, [x]) => b.op('Cos', [b.op('Mul', [x!, b.scalar(3)])]) },
  { op: 'ReduceMax', name: 'last axis, keepdims 0, with exact ties (split evenly)', inputs: [{ name: 'a', dims: [3, 4], data: tied }], emit: (b, [x]) => b.op('ReduceMax', [x!], { axes: ints([-1]), keepdims: i(0) }) },
  { op: 'ReduceMin', name: 'axis 0, keepdims 1, with exact ties', inputs: [{ name: 'a', dims: [4, 3], data: tied }], emit: (b, [x]) => b.op('ReduceMin', [x!], { axes: ints([0]), keepdims: i(1) }) },
  { op: 'Gather', name: 'axis 0, duplicate and negative indices', inputs: [{ name: 'a', dims: [5, 3] }], emit: (b, [x]) => b.op('Gather', [x!, idx(b, [0, 4, 4, -1, 2, 0], [3, 2])], { axis: i(0) }) },
  { op: 'Gather', name: 'middle axis, duplicates', inputs: [{ name: 'a', dims: [2, 5, 3] }], emit: (b, [x]) => b.op('Gather', [x!, idx(b, [4, 1, 1, -2], [4])], { axis: i(1) }) },
  { op: 'Gather', name: 'last axis, reordering (box sine embedding)', inputs: [{ name: 'a', dims: [2, 3, 4] }], emit: (b, [x]) => b.op('Gather', [x!, idx(b, [1, 0, 2, 3], [4])], { axis: i(-1) }) },
  { op: 'Gather', name: 'indices from TopK (anchors at the top-k tokens)', inputs: [{ name: 'a', dims: [7, 4] }, { name: 's', dims: [1, 7] }], emit: (b, [x, sc]) => b.op('Gather', [x!, b.opMulti('TopK', [sc!, idx(b, [3], [1])], 2, { axis: i(1) })[1]!], { axis: i(0) }) },
  { op: 'GatherElements', name: 'axis 1, duplicates', inputs: [{ name: 'a', dims: [3, 4] }], emit: (b, [x]) => b.op('GatherElements', [x!, idx(b, [0, 3, 3, 1, -1, 2, 2, 2, 0, 1, 1, 0, 3, 3, 3], [3, 5])], { axis: i(1) }) },
  { op: 'GatherND', name: 'batch_dims 1, duplicate rows (top-k memory)', inputs: [{ name: 'a', dims: [2, 6, 3] }], emit: (b, [x]) => b.op('GatherND', [x!, idx(b, [5, 0, 5, 2, 1, 1, -1, 3], [2, 4, 1])], { batch_dims: i(1) }) },
  { op: 'GatherND', name: 'batch_dims 0, index pairs', inputs: [{ name: 'a', dims: [4, 5, 3] }], emit: (b, [x]) => b.op('GatherND', [x!, idx(b, [0, 1, 3, 4, 0, 1, -1, -5], [4, 2])]) },
  { op: 'Slice', name: 'two axes, negative start', inputs: [{ name: 'a', dims: [3, 5, 4] }], emit: (b, [x]) => b.op('Slice', [x!, idx(b, [1, -3], [2]), idx(b, [3, 100], [2]), idx(b, [1, 2], [2])]) },
  { op: 'Slice', name: 'steps 2 and 3', inputs: [{ name: 'a', dims: [7, 8] }], emit: (b, [x]) => b.op('Slice', [x!, idx(b, [1, 0], [2]), idx(b, [7, 8], [2]), idx(b, [0, 1], [2]), idx(b, [2, 3], [2])]) },
  { op: 'Pad', name: 'bottom/right by 1 (HGNetv2 stem)', inputs: [{ name: 'a', dims: [1, 2, 3, 3] }], emit: (b, [x]) => b.op('Pad', [x!, idx(b, [0, 0, 0, 0, 0, 0, 1, 1], [8])], { mode: s('constant') }) },
  { op: 'Pad', name: 'every side, non-zero value', inputs: [{ name: 'a', dims: [2, 3] }], emit: (b, [x]) => b.op('Pad', [x!, idx(b, [1, 0, 2, 3], [4]), b.scalar(0.5)], { mode: s('constant') }) },
  { op: 'Tile', name: 'rank 3', inputs: [{ name: 'a', dims: [2, 1, 3] }], emit: (b, [x]) => b.op('Tile', [x!, idx(b, [2, 3, 1], [3])]) },
  { op: 'TopK', name: 'values, axis 1', inputs: [{ name: 'a', dims: [2, 7] }], emit: (b, [x]) => b.opMulti('TopK', [x!, idx(b, [3], [1])], 2, { axis: i(1), largest: i(1), sorted: i(1) })[0]! },
  { op: 'TopK', name: 'values of a softmax, last axis (LQE)', inputs: [{ name: 'a', dims: [2, 4, 6] }], emit: (b, [x]) => b.opMulti('TopK', [b.op('Softmax', [x!], { axis: i(-1) }), idx(b, [4], [1])], 2, { axis: i(-1) })[0]! },
  { op: 'LayerNormalization', name: 'last axis', inputs: [{ name: 'x', dims: [2, 3, 8] }, { name: 'scale', dims: [8] }, { name: 'bias', dims: [8] }], emit: (b, xs) => b.op('LayerNormalization', xs, { axis: i(-1), epsilon: f(1e-5) }) },
  { op: 'LayerNormalization', name: 'last two axes, no bias', inputs: [{ name: 'x', dims: [2, 3, 4] }, { name: 'scale', dims: [3, 4] }], emit: (b, xs) => b.op('LayerNormalization', xs, { axis: i(1), epsilon: f(1e-3) }) },
  {
    op: 'BatchNormalization', name: 'inference mode, every input', inputs: [{ name: 'x', dims: [2, 3, 4, 4] }, { name: 'gamma', dims: [3] }, { name: 'beta', dims: [3] }, { name: 'mean', dims: [3] }, { name: 'var', dims: [3], data: positive(3) }],
    emit: (b, xs) => b.op('BatchNormalization', xs, { epsilon: f(1e-3) }),
  },
  { op: 'GridSample', name: 'bilinear, zeros, align_corners 0, off-map and repeated samples', inputs: [{ name: 'x', dims: [2, 3, 5, 6] }, { name: 'grid', dims: [2, 4, 3, 2], data: gridData() }], emit: gridSample(0), eps: 3e-4 },
  { op: 'GridSample', name: 'bilinear, zeros, align_corners 1', inputs: [{ name: 'x', dims: [2, 3, 5, 6] }, { name: 'grid', dims: [2, 4, 3, 2], data: gridData() }], emit: gridSample(1), eps: 3e-4 },
  { op: 'MaxPool', name: '2x2 stride 1 ceil_mode (HGNetv2 stem)', inputs: [{ name: 'x', dims: [1, 2, 5, 5] }], emit: (b, [x]) => b.op('MaxPool', [x!], { kernel_shape: ints([2, 2]), strides: ints([1, 1]), pads: ints([0, 0, 0, 0]), ceil_mode: i(1) }) },
  { op: 'MaxPool', name: '3x3 stride 2 ceil_mode (partial last window)', inputs: [{ name: 'x', dims: [1, 2, 6, 6] }], emit: (b, [x]) => b.op('MaxPool', [x!], { kernel_shape: ints([3, 3]), strides: ints([2, 2]), pads: ints([0, 0, 0, 0]), ceil_mode: i(1) }) },
  {
    op: 'BatchNormTrain', name: 'composite, closed-form gradient (precise and float32 statistics)',
    inputs: [{ name: 'x', dims: [3, 4, 5, 5] }, { name: 'gamma', dims: [4], data: positive(4) }, { name: 'beta', dims: [4] }],
    emit: (b, [x, g, bt]) => {
      const a = batchNormTrain(b, x!, g!, bt!, b.scalar(0), b.scalar(1), { eps: 1e-3, momentum: 0.03, channels: 4 }).y;
      const c = batchNormTrain(b, x!, g!, bt!, b.scalar(0), b.scalar(1), { eps: 1e-3, momentum: 0.03, channels: 4, preciseStats: false }).y;
      return b.op('Add', [a, b.op('Mul', [c, b.scalar(0.5)])]);
    },
  },
];
