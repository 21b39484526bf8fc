/**
 * Float64 kernels of the indexing, sampling and normalisation ops the DETR graphs and their
 * gradients use: Gather, GatherElements, GatherND, ScatterND, Tile, GridSample,
 * LayerNormalization and Erf. ONNX opset-17 semantics; negative indices count from the end.
 */
import { array, normAxis, stridesOf, type F64 } from './array.ts';
import { numel } from '../tensor.ts';

const wrap = (v: number, size: number, what: string): number => {
  const k = v < 0 ? v + size : v;
  if (!(k >= 0 && k < size)) throw new RangeError(`${what}: index ${v} out of range for size ${size}`);
  return k;
};

export function gather(data: F64, indices: F64, axis: number): F64 {
  const a = normAxis(axis, data.dims.length);
  const outer = numel(data.dims.slice(0, a));
  const inner = numel(data.dims.slice(a + 1));
  const size = data.dims[a]!;
  const count = indices.data.length;
  const out = array([...data.dims.slice(0, a), ...indices.dims, ...data.dims.slice(a + 1)]);
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < count; j++) {
      const from = (o * size + wrap(indices.data[j]!, size, 'Gather')) * inner;
      out.data.set(data.data.subarray(from, from + inner), (o * count + j) * inner);
    }
  }
  return out;
}

/** Flat offset in `dims` of every position of `shape` (row-major), with axis `a` taken from `pick`. */
function elementOffsets(dims: number[], shape: number[], a: number, pick: (k: number) => number): Int32Array {
  const src = stridesOf(dims);
  const own = stridesOf(shape);
  const n = numel(shape);
  const off = new Int32Array(n);
  for (let k = 0; k < n; k++) {
    let rest = k;
    let flat = 0;
    for (let d = 0; d < shape.length; d++) {
      const p = Math.floor(rest / own[d]!);
      rest -= p * own[d]!;
      flat += (d === a ? pick(k) : p) * src[d]!;
    }
    off[k] = flat;
  }
  return off;
}

export function gatherElements(data: F64, indices: F64, axis: number): F64 {
  const a = normAxis(axis, data.dims.length);
  const off = elementOffsets(data.dims, indices.dims, a, (k) => wrap(indices.data[k]!, data.dims[a]!, 'GatherElements'));
  return array([...indices.dims], Float64Array.from(off, (o) => data.data[o]!));
}

/** ScatterElements with reduction 'none' or 'add' (updates applied in index order). */
export function scatterElements(data: F64, indices: F64, updates: F64, axis: number, reduction: 'none' | 'add'): F64 {
  const a = normAxis(axis, data.dims.length);
  const out = { dims: [...data.dims], data: Float64Array.from(data.data) };
  const off = elementOffsets(data.dims, indices.dims, a, (k) => wrap(indices.data[k]!, data.dims[a]!, 'ScatterElements'));
  for (let k = 0; k < off.length; k++) out.data[off[k]!] = (reduction === 'add' ? out.data[off[k]!]! : 0) + updates.data[k]!;
  return out;
}

/** Start offset in `dims` of the slice addressed by the `m`-tuple at `tuple` of `indices`, after `base`. */
function tupleOffset(dims: number[], first: number, indices: F64, tuple: number, m: number, what: string): number {
  const st = stridesOf(dims);
  let flat = 0;
  for (let j = 0; j < m; j++) flat += wrap(indices.data[tuple * m + j]!, dims[first + j]!, what) * st[first + j]!;
  return flat;
}

export function gatherND(data: F64, indices: F64, batchDims: number): F64 {
  const m = indices.dims[indices.dims.length - 1]!;
  const bd = batchDims;
  const batch = numel(data.dims.slice(0, bd));
  const perBatch = numel(indices.dims.slice(bd, -1));
  const slice = numel(data.dims.slice(bd + m));
  const batchStride = numel(data.dims.slice(bd));
  const out = array([...indices.dims.slice(0, -1), ...data.dims.slice(bd + m)]);
  for (let p = 0; p < batch; p++) {
    for (let t = 0; t < perBatch; t++) {
      const from = p * batchStride + tupleOffset(data.dims, bd, indices, p * perBatch + t, m, 'GatherND');
      out.data.set(data.data.subarray(from, from + slice), (p * perBatch + t) * slice);
    }
  }
  return out;
}

export function scatterND(data: F64, indices: F64, updates: F64, reduction: 'none' | 'add'): F64 {
  const m = indices.dims[indices.dims.length - 1]!;
  const tuples = numel(indices.dims.slice(0, -1));
  const slice = numel(data.dims.slice(m));
  const out = { dims: [...data.dims], data: Float64Array.from(data.data) };
  for (let t = 0; t < tuples; t++) {
    const at = tupleOffset(data.dims, 0, indices, t, m, 'ScatterND');
    for (let e = 0; e < slice; e++) out.data[at + e] = (reduction === 'add' ? out.data[at + e]! : 0) + updates.data[t * slice + e]!;
  }
  return out;
}

export function tile(x: F64, repeats: number[]): F64 {
  const dims = x.dims.map((d, k) => d * repeats[k]!);
  const src = stridesOf(x.dims);
  const out = array(dims);
  const pos = dims.map(() => 0);
  for (let k = 0; k < out.data.length; k++) {
    let flat = 0;
    for (let a = 0; a < dims.length; a++) flat += (pos[a]! % x.dims[a]!) * src[a]!;
    out.data[k] = x.data[flat]!;
    for (let a = dims.length - 1; a >= 0; a--) {
      if (++pos[a]! < dims[a]!) break;
      pos[a] = 0;
    }
  }
  return out;
}

/** GridSample, 4-D, bilinear, zeros padding: out-of-map corners read 0. */
export function gridSampleBilinear(x: F64, grid: F64, alignCorners: boolean): F64 {
  const [n, c, h, w] = x.dims as [number, number, number, number];
  const [gn, ho, wo] = grid.dims as [number, number, number, number];
  if (gn !== n) throw new RangeError(`GridSample: grid batch ${gn} differs from input batch ${n}`);
  const out = array([n, c, ho, wo]);
  const p = ho * wo;
  for (let b = 0; b < n; b++) {
    for (let q = 0; q < p; q++) {
      const gx = grid.data[(b * p + q) * 2]!;
      const gy = grid.data[(b * p + q) * 2 + 1]!;
      const px = alignCorners ? ((gx + 1) / 2) * (w - 1) : ((gx + 1) * w - 1) / 2;
      const py = alignCorners ? ((gy + 1) / 2) * (h - 1) : ((gy + 1) * h - 1) / 2;
      const x0 = Math.floor(px);
      const y0 = Math.floor(py);
      const fx = px - x0;
      const fy = py - y0;
      const taps: Array<[number, number, number]> = [[y0, x0, (1 - fy) * (1 - fx)], [y0, x0 + 1, (1 - fy) * fx], [y0 + 1, x0, fy * (1 - fx)], [y0 + 1, x0 + 1, fy * fx]];
      for (let ch = 0; ch < c; ch++) {
        const base = (b * c + ch) * h * w;
        let acc = 0;
        for (const [yy, xx, wt] of taps) if (yy >= 0 && yy < h && xx >= 0 && xx < w) acc += wt * x.data[base + yy * w + xx]!;
        out.data[(b * c + ch) * p + q] = acc;
      }
    }
  }
  return out;
}

/** LayerNormalization over axes [axis, rank): Y, Mean and InvStdDev (both shaped D[:axis] + ones). */
export function layerNormalization(x: F64, scale: F64, bias: F64 | undefined, axis: number, eps: number): [F64, F64, F64] {
  const a = normAxis(axis, x.dims.length);
  const rows = numel(x.dims.slice(0, a));
  const len = numel(x.dims.slice(a));
  const statDims = x.dims.map((d, k) => (k < a ? d : 1));
  const y = array([...x.dims]);
  const mean = array(statDims);
  const inv = array(statDims);
  if (scale.data.length !== len || (bias && bias.data.length !== len)) throw new RangeError(`LayerNormalization: scale/bias must have ${len} elements`);
  for (let r = 0; r < rows; r++) {
    const base = r * len;
    let s = 0;
    for (let k = 0; k < len; k++) s += x.data[base + k]!;
    const mu = s / len;
    let v = 0;
    for (let k = 0; k < len; k++) v += (x.data[base + k]! - mu) ** 2;
    const is = 1 / Math.sqrt(v / len + eps);
    mean.data[r] = mu;
    inv.data[r] = is;
    for (let k = 0; k < len; k++) y.data[base + k] = (x.data[base + k]! - mu) * is * scale.data[k]! + (bias ? bias.data[k]! : 0);
  }
  return [y, mean, inv];
}

/**
 * erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n (2x^2)^n x / (1*3*...*(2n+1)): every term positive, so no
 * cancellation; erf(x) = +-1 in float64 beyond |x| = 6.
 */
export function erf(x: number): number {
  const ax = Math.abs(x);
  if (ax >= 6) return Math.sign(x);
  if (ax === 0) return x;
  const x2 = 2 * ax * ax;
  let term = ax;
  let sum = ax;
  for (let k = 1; k < 500 && term > sum * 1e-17; k++) {
    term *= x2 / (2 * k + 1);
    sum += term;
  }
  return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * Math.exp(-ax * ax) * sum;
}
