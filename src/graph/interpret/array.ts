/**
 * Float64 arrays with shapes, and the layout helpers (broadcasting, strides, axis walks) the
 * reference interpreter's kernels share. Integers and booleans are held as float64 too: the graphs
 * this interprets only index with values far below 2^53.
 */
import { numel } from '../tensor.ts';

export interface F64 {
  dims: number[];
  data: Float64Array;
}

export const array = (dims: number[], data?: Float64Array): F64 => ({ dims, data: data ?? new Float64Array(numel(dims)) });

export function stridesOf(dims: readonly number[]): number[] {
  const s = new Array<number>(dims.length);
  let acc = 1;
  for (let k = dims.length - 1; k >= 0; k--) {
    s[k] = acc;
    acc *= dims[k]!;
  }
  return s;
}

export function normAxis(axis: number, rank: number): number {
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new RangeError(`axis ${axis} out of range for rank ${rank}`);
  return a;
}

/** Numpy-style broadcast of several shapes. */
export function broadcastDims(shapes: number[][]): number[] {
  const rank = Math.max(...shapes.map((s) => s.length));
  const out = new Array<number>(rank).fill(1);
  for (const s of shapes) {
    for (let k = 0; k < s.length; k++) {
      const o = rank - s.length + k;
      const d = s[k]!;
      if (d === 1) continue;
      if (out[o] !== 1 && out[o] !== d) throw new RangeError(`shapes [${shapes.map((x) => x.join(',')).join('] [')}] do not broadcast`);
      out[o] = d;
    }
  }
  return out;
}

/** For every output element of shape `out`, the flat index into a tensor of shape `dims` broadcast to it. */
export function broadcastIndex(dims: readonly number[], out: readonly number[]): Int32Array {
  const n = numel(out);
  const idx = new Int32Array(n);
  if (numel(dims) === n) {
    for (let k = 0; k < n; k++) idx[k] = k;
    return idx;
  }
  if (numel(dims) === 1) return idx;
  return stridedOffsets(out, broadcastSteps(dims, out));
}

/** Per-axis element steps of `dims` broadcast to `out` (0 along broadcast axes). */
export function broadcastSteps(dims: readonly number[], out: readonly number[]): number[] {
  const src = stridesOf(dims);
  const step = new Array<number>(out.length).fill(0);
  for (let k = 0; k < dims.length; k++) step[out.length - dims.length + k] = dims[k] === 1 ? 0 : src[k]!;
  return step;
}

/** Row-major walk over `dims`: the flat offset sum(pos[a] * step[a]) of every position. */
export function stridedOffsets(dims: readonly number[], step: readonly number[]): Int32Array {
  const rank = dims.length;
  const idx = new Int32Array(numel(dims));
  const pos = new Array<number>(rank).fill(0);
  let flat = 0;
  for (let k = 0; k < idx.length; k++) {
    idx[k] = flat;
    for (let a = rank - 1; a >= 0; a--) {
      pos[a]!++;
      flat += step[a]!;
      if (pos[a]! < dims[a]!) break;
      flat -= step[a]! * dims[a]!;
      pos[a] = 0;
    }
  }
  return idx;
}

/** Applies `f` element-wise over broadcast inputs. */
export function mapN(inputs: F64[], f: (...v: number[]) => number): F64 {
  const dims = broadcastDims(inputs.map((t) => t.dims));
  const out = array(dims);
  const n = out.data.length;
  if (inputs.length === 1) {
    const a = inputs[0]!.data;
    for (let k = 0; k < n; k++) out.data[k] = f(a[k]!);
    return out;
  }
  const maps = inputs.map((t) => broadcastIndex(t.dims, dims));
  const datas = inputs.map((t) => t.data);
  if (inputs.length === 2) {
    const [a, b] = datas as [Float64Array, Float64Array];
    const [ia, ib] = maps as [Int32Array, Int32Array];
    for (let k = 0; k < n; k++) out.data[k] = f(a[ia[k]!]!, b[ib[k]!]!);
    return out;
  }
  const args = new Array<number>(inputs.length);
  for (let k = 0; k < n; k++) {
    for (let j = 0; j < inputs.length; j++) args[j] = datas[j]![maps[j]![k]!]!;
    out.data[k] = f(...args);
  }
  return out;
}

/**
 * Walks `dims` as (outer, axis, inner) around one axis: calls `f` once per line along that axis,
 * where element j of the line is at `base + j * stride`, and (o, i) are its outer and inner indices.
 */
export function forEachLine(dims: readonly number[], axis: number, f: (base: number, stride: number, length: number, o: number, i: number) => void): void {
  const inner = numel(dims.slice(axis + 1));
  const len = dims[axis]!;
  const outer = numel(dims.slice(0, axis));
  for (let o = 0; o < outer; o++) for (let i = 0; i < inner; i++) f(o * len * inner + i, inner, len, o, i);
}

/**
 * The strided view of `src` (shape `dims`, element `pos` at `base + sum(pos[a] * step[a])`) copied
 * row-major: one offset per row, the last axis walked directly.
 */
export function copyStrided(src: Float64Array, base: number, dims: readonly number[], step: readonly number[]): Float64Array {
  const out = new Float64Array(numel(dims));
  if (!out.length) return out;
  const rank = dims.length;
  if (rank === 0) {
    out[0] = src[base]!;
    return out;
  }
  const len = dims[rank - 1]!;
  const st = step[rank - 1]!;
  const rows = stridedOffsets(dims.slice(0, -1), step.slice(0, -1));
  for (let r = 0; r < rows.length; r++) {
    const from = base + rows[r]!;
    const to = r * len;
    if (st === 1) out.set(src.subarray(from, from + len), to);
    else if (st === 0) out.fill(src[from]!, to, to + len);
    else for (let j = 0; j < len; j++) out[to + j] = src[from + j * st]!;
  }
  return out;
}

/** ONNX Transpose: output axis k is input axis perm[k]. */
export function transpose(t: F64, perm: number[]): F64 {
  const src = stridesOf(t.dims);
  const dims = perm.map((p) => t.dims[p]!);
  return array(dims, copyStrided(t.data, 0, dims, perm.map((p) => src[p]!)));
}

/** `t` broadcast to `dims` (ONNX Expand's copy). */
export function broadcastTo(t: F64, dims: number[]): F64 {
  return array(dims, copyStrided(t.data, 0, dims, broadcastSteps(t.dims, dims)));
}
