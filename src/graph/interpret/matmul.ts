/**
 * Float64 MatMul (ONNX semantics, batch dims broadcast) for the reference interpreter. Each output
 * element is one dot product accumulated in a local float64 from 0 over the inner index in
 * ascending order (the order a naive triple loop adds in). B is transposed once per batch matrix so
 * both operands stream contiguously, and a 2x4 block of outputs shares each load.
 */
import { array, broadcastDims, broadcastIndex, type F64 } from './array.ts';

export function matmul(a: F64, b: F64): F64 {
  if (a.dims.length < 2 || b.dims.length < 2) throw new Error('MatMul: 1-D operands are not supported here');
  const [m, k] = a.dims.slice(-2) as [number, number];
  const [k2, n] = b.dims.slice(-2) as [number, number];
  if (k !== k2) throw new RangeError(`MatMul: inner dims ${k} and ${k2} differ`);
  const batch = broadcastDims([a.dims.slice(0, -2), b.dims.slice(0, -2)]);
  const ia = broadcastIndex(a.dims.slice(0, -2), batch);
  const ib = broadcastIndex(b.dims.slice(0, -2), batch);
  const out = array([...batch, m, n]);
  const bt = new Float64Array(k * n);
  let transposed = -1;
  for (let p = 0; p < ia.length; p++) {
    if (ib[p] !== transposed) {
      transposed = ib[p]!;
      transposeBlock(b.data, transposed * k * n, k, n, bt);
    }
    gemm(a.data, ia[p]! * m * k, bt, out.data, p * m * n, m, k, n);
  }
  return out;
}

/** bt[q * k + j] = b[off + j * n + q]. */
export function transposeBlock(b: Float64Array, off: number, k: number, n: number, bt: Float64Array): void {
  for (let j = 0; j < k; j++) {
    const row = off + j * n;
    for (let q = 0; q < n; q++) bt[q * k + j] = b[row + q]!;
  }
}

/** o[oo + i * n + q] = sum_j a[ao + i * k + j] * bt[q * k + j], j ascending. */
export function gemm(a: Float64Array, ao: number, bt: Float64Array, o: Float64Array, oo: number, m: number, k: number, n: number): void {
  let i = 0;
  for (; i + 1 < m; i += 2) {
    const r0 = ao + i * k;
    const r1 = r0 + k;
    const o0 = oo + i * n;
    const o1 = o0 + n;
    let q = 0;
    for (; q + 3 < n; q += 4) {
      const c0 = q * k;
      const c1 = c0 + k;
      const c2 = c1 + k;
      const c3 = c2 + k;
      let s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
      for (let j = 0; j < k; j++) {
        const x0 = a[r0 + j]!;
        const x1 = a[r1 + j]!;
        const y0 = bt[c0 + j]!;
        const y1 = bt[c1 + j]!;
        const y2 = bt[c2 + j]!;
        const y3 = bt[c3 + j]!;
        s00 += x0 * y0; s01 += x0 * y1; s02 += x0 * y2; s03 += x0 * y3;
        s10 += x1 * y0; s11 += x1 * y1; s12 += x1 * y2; s13 += x1 * y3;
      }
      o[o0 + q] = s00; o[o0 + q + 1] = s01; o[o0 + q + 2] = s02; o[o0 + q + 3] = s03;
      o[o1 + q] = s10; o[o1 + q + 1] = s11; o[o1 + q + 2] = s12; o[o1 + q + 3] = s13;
    }
    for (; q < n; q++) {
      const c = q * k;
      let s0 = 0, s1 = 0;
      for (let j = 0; j < k; j++) {
        const y = bt[c + j]!;
        s0 += a[r0 + j]! * y;
        s1 += a[r1 + j]! * y;
      }
      o[o0 + q] = s0;
      o[o1 + q] = s1;
    }
  }
  if (i < m) {
    const r = ao + i * k;
    const orow = oo + i * n;
    for (let q = 0; q < n; q++) {
      const c = q * k;
      let s = 0;
      for (let j = 0; j < k; j++) s += a[r + j]! * bt[c + j]!;
      o[orow + q] = s;
    }
  }
}
