/**
 * One float64 kernel per ONNX op kind the package's graphs use (forward, loss and backward), with
 * ONNX opset-17 semantics. Unsupported attributes fail loudly rather than compute something else.
 */
import { attrFloat, attrInt, attrInts, type Node } from '../ir.ts';
import {
  array, broadcastDims, broadcastTo, copyStrided, forEachLine, mapN, normAxis, stridesOf, transpose, type F64,
} from './array.ts';
import { avgPool2d, conv2d, convTranspose2d, maxPool2d, type Conv2dAttrs } from './conv.ts';
import { arith, broadcastRows, where } from './elementwise.ts';
import { matmul } from './matmul.ts';
import { numel } from '../tensor.ts';
import { erf, gather, gatherElements, gatherND, gridSampleBilinear, layerNormalization, scatterElements, scatterND, tile } from './indexing.ts';

export type Kernel = (inputs: Array<F64 | undefined>, node: Node) => F64[];

const attrString = (n: Node, key: string, fallback: string): string => {
  const a = n.attrs[key];
  return a && 's' in a ? a.s : fallback;
};

const ints = (t: F64 | undefined): number[] => (t ? Array.from(t.data) : []);

function need(inputs: Array<F64 | undefined>, k: number, node: Node): F64 {
  const t = inputs[k];
  if (!t) throw new Error(`${node.op} ${node.name}: input ${k} is missing`);
  return t;
}

const unary = (f: (x: number) => number): Kernel => (inputs, node) => [mapN([need(inputs, 0, node)], f)];
const binary = (f: (a: number, b: number) => number): Kernel => (inputs, node) => [mapN([need(inputs, 0, node), need(inputs, 1, node)], f)];
const variadic = (f: (a: number, b: number) => number): Kernel => (inputs) => {
  const xs = inputs.filter((t): t is F64 => !!t);
  let acc = xs[0]!;
  for (let k = 1; k < xs.length; k++) acc = mapN([acc, xs[k]!], f);
  return [xs.length === 1 ? { dims: [...acc.dims], data: Float64Array.from(acc.data) } : acc];
};

const b2n = (v: boolean): number => (v ? 1 : 0);

type Reduction = 'sum' | 'mean' | 'sumsquare' | 'max' | 'min';

/**
 * A reduction over `axes` (all when empty): x walked row-major, each kept cell accumulating its
 * elements in that order (mean: the sum, then divided by the count).
 */
function reduce(x: F64, axesIn: number[], keepdims: boolean, kind: Reduction): F64 {
  const rank = x.dims.length;
  const axes = new Set((axesIn.length ? axesIn : x.dims.map((_, k) => k)).map((a) => normAxis(a, rank)));
  const kept = x.dims.map((d, k) => (axes.has(k) ? 1 : d));
  const out = array(kept);
  out.data.fill(kind === 'max' ? -Infinity : kind === 'min' ? Infinity : 0);
  if (x.data.length) {
    const { len, starts, steps } = broadcastRows([x, out], x.dims);
    const [rx, ro] = starts as [Int32Array, Int32Array];
    const [sx, so] = steps as [number, number];
    const src = x.data;
    const o = out.data;
    for (let r = 0; r < rx.length; r++) {
      const fx = rx[r]!;
      const fo = ro[r]!;
      switch (kind) {
        case 'sum': case 'mean': for (let j = 0; j < len; j++) o[fo + j * so] += src[fx + j * sx]!; break;
        case 'sumsquare': for (let j = 0; j < len; j++) o[fo + j * so] += src[fx + j * sx]! * src[fx + j * sx]!; break;
        case 'max': for (let j = 0; j < len; j++) { const v = src[fx + j * sx]!; if (v > o[fo + j * so]!) o[fo + j * so] = v; } break;
        case 'min': for (let j = 0; j < len; j++) { const v = src[fx + j * sx]!; if (v < o[fo + j * so]!) o[fo + j * so] = v; } break;
      }
    }
  }
  if (kind === 'mean') {
    const count = x.data.length / out.data.length;
    for (let k = 0; k < out.data.length; k++) out.data[k] = out.data[k]! / count;
  }
  return keepdims ? out : { dims: x.dims.filter((_, k) => !axes.has(k)), data: out.data };
}

function reduceAxes(inputs: Array<F64 | undefined>, node: Node): number[] {
  return inputs[1] ? ints(inputs[1]) : attrInts(node, 'axes', []);
}

const reduction = (kind: Reduction): Kernel => (inputs, node) => {
  const axes = reduceAxes(inputs, node);
  if (!axes.length && attrInt(node, 'noop_with_empty_axes', 0)) return [need(inputs, 0, node)];
  return [reduce(need(inputs, 0, node), axes, attrInt(node, 'keepdims', 1) === 1, kind)];
};

function softmax(x: F64, axis: number, log: boolean): F64 {
  const out = array([...x.dims]);
  const src = x.data;
  const o = out.data;
  forEachLine(x.dims, normAxis(axis, x.dims.length), (base, stride, len) => {
    const end = base + len * stride;
    let max = -Infinity;
    for (let j = base; j < end; j += stride) max = Math.max(max, src[j]!);
    let sum = 0;
    for (let j = base; j < end; j += stride) {
      const e = Math.exp(src[j]! - max);
      o[j] = e;
      sum += e;
    }
    if (log) {
      const ls = Math.log(sum);
      for (let j = base; j < end; j += stride) o[j] = src[j]! - max - ls;
    } else {
      for (let j = base; j < end; j += stride) o[j] = o[j]! / sum;
    }
  });
  return out;
}

function slice(x: F64, starts: number[], ends: number[], axesIn: number[], stepsIn: number[]): F64 {
  const rank = x.dims.length;
  const begin = x.dims.map(() => 0);
  const step = x.dims.map(() => 1);
  const dims = [...x.dims];
  const axes = axesIn.length ? axesIn : starts.map((_, k) => k);
  axes.forEach((ax, k) => {
    const a = normAxis(ax, rank);
    const d = x.dims[a]!;
    const st = stepsIn[k] ?? 1;
    const clamp = (v: number, lo: number, hi: number): number => Math.min(Math.max(v, lo), hi);
    let s = starts[k]!;
    let e = ends[k]!;
    if (s < 0) s += d;
    if (e < 0) e += d;
    if (st > 0) {
      s = clamp(s, 0, d);
      e = clamp(e, 0, d);
    } else {
      s = clamp(s, 0, d - 1);
      e = clamp(e, -1, d - 1);
    }
    begin[a] = s;
    step[a] = st;
    dims[a] = Math.max(0, Math.ceil((e - s) / st));
  });
  const src = stridesOf(x.dims);
  const base = begin.reduce((acc, v, a) => acc + v * src[a]!, 0);
  return array(dims, copyStrided(x.data, base, dims, step.map((st, a) => st * src[a]!)));
}

function concat(xs: F64[], axis: number): F64 {
  const a = normAxis(axis, xs[0]!.dims.length);
  const dims = [...xs[0]!.dims];
  dims[a] = xs.reduce((s, t) => s + t.dims[a]!, 0);
  const out = array(dims);
  const outer = numel(dims.slice(0, a));
  const inner = numel(dims.slice(a + 1));
  let offset = 0;
  for (const t of xs) {
    const chunk = t.dims[a]! * inner;
    for (let o = 0; o < outer; o++) out.data.set(t.data.subarray(o * chunk, (o + 1) * chunk), o * dims[a]! * inner + offset);
    offset += chunk;
  }
  return out;
}

function split(x: F64, axis: number, parts: number[]): F64[] {
  const a = normAxis(axis, x.dims.length);
  const inner = numel(x.dims.slice(a + 1));
  const outer = numel(x.dims.slice(0, a));
  let offset = 0;
  return parts.map((p) => {
    const dims = [...x.dims];
    dims[a] = p;
    const out = array(dims);
    for (let o = 0; o < outer; o++) {
      const from = (o * x.dims[a]! + offset) * inner;
      out.data.set(x.data.subarray(from, from + p * inner), o * p * inner);
    }
    offset += p;
    return out;
  });
}

function reshape(x: F64, shape: number[], allowZero: boolean): F64 {
  const dims = shape.map((d, k) => (d === 0 && !allowZero ? x.dims[k]! : d));
  const known = dims.filter((d) => d !== -1).reduce((p, d) => p * d, 1);
  const out = dims.map((d) => (d === -1 ? x.data.length / known : d));
  if (numel(out) !== x.data.length) throw new RangeError(`Reshape: [${x.dims.join(',')}] cannot become [${shape.join(',')}]`);
  return { dims: out, data: x.data };
}

function pad(x: F64, pads: number[], value: number): F64 {
  const rank = x.dims.length;
  const dims = x.dims.map((d, k) => d + pads[k]! + pads[k + rank]!);
  const out = array(dims);
  out.data.fill(value);
  const dst = stridesOf(dims);
  const pos = x.dims.map(() => 0);
  for (let k = 0; k < x.data.length; k++) {
    let flat = 0;
    let inside = true;
    for (let a = 0; a < rank; a++) {
      const o = pos[a]! + pads[a]!;
      if (o < 0 || o >= dims[a]!) inside = false;
      flat += o * dst[a]!;
    }
    if (inside) out.data[flat] = x.data[k]!;
    for (let a = rank - 1; a >= 0; a--) {
      if (++pos[a]! < x.dims[a]!) break;
      pos[a] = 0;
    }
  }
  return out;
}

function resizeNearest(x: F64, scales: number[]): F64 {
  const rank = x.dims.length;
  const dims = x.dims.map((d, k) => Math.floor(d * scales[k]!));
  const out = array(dims);
  const src = stridesOf(x.dims);
  const pos = dims.map(() => 0);
  for (let k = 0; k < out.data.length; k++) {
    let flat = 0;
    for (let a = 0; a < rank; a++) flat += Math.min(Math.floor(pos[a]! / scales[a]!), x.dims[a]! - 1) * src[a]!;
    out.data[k] = x.data[flat]!;
    for (let a = rank - 1; a >= 0; a--) {
      if (++pos[a]! < dims[a]!) break;
      pos[a] = 0;
    }
  }
  return out;
}

function topK(x: F64, k: number, axis: number, largest: boolean): [F64, F64] {
  const a = normAxis(axis, x.dims.length);
  const dims = [...x.dims];
  dims[a] = k;
  const values = array(dims);
  const indices = array(dims);
  const inner = numel(x.dims.slice(a + 1));
  forEachLine(x.dims, a, (base, stride, len, o, i) => {
    const order = Array.from({ length: len }, (_, j) => j);
    const v = (j: number): number => x.data[base + j * stride]!;
    order.sort((p, q) => (largest ? v(q) - v(p) : v(p) - v(q)) || p - q);
    const outBase = o * k * inner + i;
    for (let j = 0; j < k; j++) {
      values.data[outBase + j * inner] = v(order[j]!);
      indices.data[outBase + j * inner] = order[j]!;
    }
  });
  return [values, indices];
}

function argMax(x: F64, axis: number, keepdims: boolean): F64 {
  const a = normAxis(axis, x.dims.length);
  const dims = [...x.dims];
  dims[a] = 1;
  const out = array(dims);
  const inner = numel(x.dims.slice(a + 1));
  forEachLine(x.dims, a, (base, stride, len, o, i) => {
    let best = 0;
    for (let j = 1; j < len; j++) if (x.data[base + j * stride]! > x.data[base + best * stride]!) best = j;
    out.data[o * inner + i] = best;
  });
  return keepdims ? out : { dims: x.dims.filter((_, k) => k !== a), data: out.data };
}

function convAttrs(node: Node, w: F64): Conv2dAttrs {
  const k = attrInts(node, 'kernel_shape', w.dims.slice(2));
  const pads = attrInts(node, 'pads', [0, 0, 0, 0]);
  if (attrString(node, 'auto_pad', 'NOTSET') !== 'NOTSET') throw new Error(`${node.name}: auto_pad is not supported`);
  return {
    kernel: [k[0]!, k[1]!],
    strides: attrInts(node, 'strides', [1, 1]) as [number, number],
    pads: [pads[0]!, pads[1]!, pads[2]!, pads[3]!],
    dilations: attrInts(node, 'dilations', [1, 1]) as [number, number],
    group: attrInt(node, 'group', 1),
  };
}

function scatterReduction(node: Node): 'none' | 'add' {
  const r = attrString(node, 'reduction', 'none');
  if (r !== 'none' && r !== 'add') throw new Error(`${node.name}: scatter reduction ${r} is not supported`);
  return r;
}

const FLOAT_TYPES = new Set([1, 10, 11, 16]);
const INT_TYPES = new Set([2, 3, 4, 5, 6, 7, 12, 13]);

export const KERNELS: Record<string, Kernel> = {
  Identity: (inputs, node) => [need(inputs, 0, node)],
  Cast: (inputs, node) => {
    const to = attrInt(node, 'to', 1);
    const x = need(inputs, 0, node);
    if (FLOAT_TYPES.has(to)) return [x]; // every float is carried as float64
    if (INT_TYPES.has(to)) return [mapN([x], Math.trunc)];
    if (to === 9) return [mapN([x], (v) => b2n(v !== 0))];
    throw new Error(`${node.name}: Cast to type ${to} is not supported`);
  },
  Add: (inputs, node) => [arith('add', need(inputs, 0, node), need(inputs, 1, node))],
  Sub: (inputs, node) => [arith('sub', need(inputs, 0, node), need(inputs, 1, node))],
  Mul: (inputs, node) => [arith('mul', need(inputs, 0, node), need(inputs, 1, node))],
  Div: (inputs, node) => [arith('div', need(inputs, 0, node), need(inputs, 1, node))],
  Pow: binary(Math.pow),
  Equal: binary((a, b) => b2n(a === b)),
  Greater: (inputs, node) => [arith('greater', need(inputs, 0, node), need(inputs, 1, node))],
  GreaterOrEqual: binary((a, b) => b2n(a >= b)),
  Less: binary((a, b) => b2n(a < b)),
  LessOrEqual: binary((a, b) => b2n(a <= b)),
  And: binary((a, b) => b2n(a !== 0 && b !== 0)),
  Or: binary((a, b) => b2n(a !== 0 || b !== 0)),
  Not: unary((a) => b2n(a === 0)),
  IsNaN: unary((a) => b2n(Number.isNaN(a))),
  Sum: variadic((a, b) => a + b),
  Max: variadic((a, b) => (a >= b ? a : b)),
  Min: variadic((a, b) => (a <= b ? a : b)),
  Neg: unary((a) => -a),
  Abs: unary(Math.abs),
  Sign: unary(Math.sign),
  Floor: unary(Math.floor),
  Sqrt: unary(Math.sqrt),
  Reciprocal: unary((a) => 1 / a),
  Exp: unary(Math.exp),
  Log: unary(Math.log),
  Atan: unary(Math.atan),
  Sin: unary(Math.sin),
  Cos: unary(Math.cos),
  Erf: unary(erf),
  Relu: unary((a) => (a > 0 ? a : 0)),
  Sigmoid: unary((a) => 1 / (1 + Math.exp(-a))),
  Softplus: unary((a) => (a > 0 ? a + Math.log1p(Math.exp(-a)) : Math.log1p(Math.exp(a)))),
  Where: (inputs, node) => [where(need(inputs, 0, node), need(inputs, 1, node), need(inputs, 2, node))],
  Clip: (inputs, node) => {
    const lo = inputs[1]?.data[0] ?? -Infinity;
    const hi = inputs[2]?.data[0] ?? Infinity;
    return [mapN([need(inputs, 0, node)], (v) => Math.min(Math.max(v, lo), hi))];
  },
  Size: (inputs, node) => [array([], Float64Array.of(need(inputs, 0, node).data.length))],
  Shape: (inputs, node) => [array([need(inputs, 0, node).dims.length], Float64Array.from(need(inputs, 0, node).dims))],
  Reshape: (inputs, node) => [reshape(need(inputs, 0, node), ints(inputs[1]), attrInt(node, 'allowzero', 0) === 1)],
  Transpose: (inputs, node) => {
    const x = need(inputs, 0, node);
    return [transpose(x, attrInts(node, 'perm', x.dims.map((_, k) => x.dims.length - 1 - k)))];
  },
  Flatten: (inputs, node) => {
    const x = need(inputs, 0, node);
    const axis = attrInt(node, 'axis', 1);
    const a = axis < 0 ? axis + x.dims.length : axis;
    return [{ dims: [numel(x.dims.slice(0, a)), numel(x.dims.slice(a))], data: x.data }];
  },
  Squeeze: (inputs, node) => {
    const x = need(inputs, 0, node);
    const axes = new Set(ints(inputs[1]).map((a) => normAxis(a, x.dims.length)));
    return [{ dims: x.dims.filter((d, k) => (axes.size ? !axes.has(k) : d !== 1)), data: x.data }];
  },
  Unsqueeze: (inputs, node) => {
    const x = need(inputs, 0, node);
    const rank = x.dims.length + ints(inputs[1]).length;
    const axes = new Set(ints(inputs[1]).map((a) => normAxis(a, rank)));
    const dims: number[] = [];
    let src = 0;
    for (let k = 0; k < rank; k++) dims.push(axes.has(k) ? 1 : x.dims[src++]!);
    return [{ dims, data: x.data }];
  },
  Expand: (inputs, node) => {
    const x = need(inputs, 0, node);
    return [broadcastTo(x, broadcastDims([x.dims, ints(inputs[1])]))];
  },
  Concat: (inputs, node) => [concat(inputs.filter((t): t is F64 => !!t), attrInt(node, 'axis', 0))],
  Split: (inputs, node) => {
    const x = need(inputs, 0, node);
    const axis = normAxis(attrInt(node, 'axis', 0), x.dims.length);
    const parts = inputs[1] ? ints(inputs[1]) : Array.from({ length: node.outputs.length }, () => x.dims[axis]! / node.outputs.length);
    return split(x, axis, parts);
  },
  Slice: (inputs, node) => [slice(need(inputs, 0, node), ints(inputs[1]), ints(inputs[2]), ints(inputs[3]), ints(inputs[4]))],
  Pad: (inputs, node) => {
    if (attrString(node, 'mode', 'constant') !== 'constant') throw new Error(`${node.name}: only constant Pad is supported`);
    if (inputs[3]) throw new Error(`${node.name}: Pad with axes is not supported`);
    return [pad(need(inputs, 0, node), ints(inputs[1]), inputs[2]?.data[0] ?? 0)];
  },
  Resize: (inputs, node) => {
    const ok = attrString(node, 'mode', 'nearest') === 'nearest' && attrString(node, 'coordinate_transformation_mode', 'half_pixel') === 'asymmetric' && attrString(node, 'nearest_mode', 'round_prefer_floor') === 'floor';
    if (!ok || !inputs[2]) throw new Error(`${node.name}: only nearest/asymmetric/floor Resize by scales is supported`);
    return [resizeNearest(need(inputs, 0, node), ints(inputs[2]))];
  },
  ReduceSum: reduction('sum'),
  ReduceMean: reduction('mean'),
  ReduceMax: reduction('max'),
  ReduceMin: reduction('min'),
  ReduceSumSquare: reduction('sumsquare'),
  ArgMax: (inputs, node) => {
    if (attrInt(node, 'select_last_index', 0)) throw new Error(`${node.name}: select_last_index is not supported`);
    return [argMax(need(inputs, 0, node), attrInt(node, 'axis', 0), attrInt(node, 'keepdims', 1) === 1)];
  },
  TopK: (inputs, node) => topK(need(inputs, 0, node), ints(inputs[1])[0]!, attrInt(node, 'axis', -1), attrInt(node, 'largest', 1) === 1),
  Softmax: (inputs, node) => [softmax(need(inputs, 0, node), attrInt(node, 'axis', -1), false)],
  LogSoftmax: (inputs, node) => [softmax(need(inputs, 0, node), attrInt(node, 'axis', -1), true)],
  BatchNormalization: (inputs, node) => {
    if (attrInt(node, 'training_mode', 0)) throw new Error(`${node.name}: training-mode BatchNormalization is not supported`);
    const x = need(inputs, 0, node);
    const [scale, bias, mean, variance] = [1, 2, 3, 4].map((k) => need(inputs, k, node).data);
    const eps = attrFloat(node, 'epsilon', 1e-5);
    const out = array([...x.dims]);
    const c = x.dims[1]!;
    const inner = numel(x.dims.slice(2));
    for (let k = 0; k < x.data.length; k++) {
      const ch = Math.floor(k / inner) % c;
      out.data[k] = ((x.data[k]! - mean[ch]!) / Math.sqrt(variance[ch]! + eps)) * scale[ch]! + bias[ch]!;
    }
    return [out];
  },
  MatMul: (inputs, node) => [matmul(need(inputs, 0, node), need(inputs, 1, node))],
  ScatterElements: (inputs, node) => [scatterElements(need(inputs, 0, node), need(inputs, 1, node), need(inputs, 2, node), attrInt(node, 'axis', 0), scatterReduction(node))],
  ScatterND: (inputs, node) => [scatterND(need(inputs, 0, node), need(inputs, 1, node), need(inputs, 2, node), scatterReduction(node))],
  Gather: (inputs, node) => [gather(need(inputs, 0, node), need(inputs, 1, node), attrInt(node, 'axis', 0))],
  GatherElements: (inputs, node) => [gatherElements(need(inputs, 0, node), need(inputs, 1, node), attrInt(node, 'axis', 0))],
  GatherND: (inputs, node) => [gatherND(need(inputs, 0, node), need(inputs, 1, node), attrInt(node, 'batch_dims', 0))],
  Tile: (inputs, node) => [tile(need(inputs, 0, node), ints(inputs[1]))],
  GridSample: (inputs, node) => {
    const mode = attrString(node, 'mode', 'bilinear');
    const padding = attrString(node, 'padding_mode', 'zeros');
    if ((mode !== 'bilinear' && mode !== 'linear') || padding !== 'zeros') throw new Error(`${node.name}: only bilinear GridSample with zeros padding is supported (got ${mode}, ${padding})`);
    const x = need(inputs, 0, node);
    if (x.dims.length !== 4) throw new Error(`${node.name}: only 4-D GridSample is supported`);
    return [gridSampleBilinear(x, need(inputs, 1, node), attrInt(node, 'align_corners', 0) === 1)];
  },
  LayerNormalization: (inputs, node) => {
    if (attrInt(node, 'stash_type', 1) !== 1) throw new Error(`${node.name}: LayerNormalization stash_type other than 1 is not supported`);
    return layerNormalization(need(inputs, 0, node), need(inputs, 1, node), inputs[2], attrInt(node, 'axis', -1), attrFloat(node, 'epsilon', 1e-5));
  },
  Conv: (inputs, node) => {
    const w = need(inputs, 1, node);
    return [conv2d(need(inputs, 0, node), w, inputs[2], convAttrs(node, w))];
  },
  ConvTranspose: (inputs, node) => {
    const w = need(inputs, 1, node);
    if (node.attrs.output_shape) throw new Error(`${node.name}: ConvTranspose output_shape is not supported`);
    const op = attrInts(node, 'output_padding', [0, 0]);
    return [convTranspose2d(need(inputs, 0, node), w, inputs[2], { ...convAttrs(node, w), outputPadding: [op[0]!, op[1]!] })];
  },
  MaxPool: (inputs, node) => {
    if (attrInt(node, 'storage_order', 0)) throw new Error(`${node.name}: MaxPool storage_order is not supported`);
    if (attrInts(node, 'dilations', [1, 1]).some((d) => d !== 1)) throw new Error(`${node.name}: dilated MaxPool is not supported`);
    const k = attrInts(node, 'kernel_shape', []);
    const pads = attrInts(node, 'pads', [0, 0, 0, 0]);
    return maxPool2d(need(inputs, 0, node), { kernel: [k[0]!, k[1]!], strides: attrInts(node, 'strides', [1, 1]) as [number, number], pads: pads as [number, number, number, number], ceil: attrInt(node, 'ceil_mode', 0) === 1 });
  },
  AveragePool: (inputs, node) => {
    if (attrInt(node, 'ceil_mode', 0)) throw new Error(`${node.name}: AveragePool ceil_mode is not supported`);
    const k = attrInts(node, 'kernel_shape', []);
    const pads = attrInts(node, 'pads', [0, 0, 0, 0]);
    return [avgPool2d(need(inputs, 0, node), { kernel: [k[0]!, k[1]!], strides: attrInts(node, 'strides', [1, 1]) as [number, number], pads: pads as [number, number, number, number] }, attrInt(node, 'count_include_pad', 0) === 1)];
  },
};
