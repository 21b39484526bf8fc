/**
 * Float64 Add, Sub, Mul, Div, Greater and Where over broadcast operands for the reference
 * interpreter, and the row walk the reductions share. The output is walked as rows after merging
 * the axes every operand steps through alike, so a same-shape or trailing-broadcast operation is a
 * few long rows; each op has its own loop (a shared loop calling a closure per element would not be
 * inlined).
 */
import { array, broadcastDims, broadcastSteps, stridedOffsets, type F64 } from './array.ts';

export type Arith = 'add' | 'sub' | 'mul' | 'div' | 'greater';

/** Merges axis a into a + 1 wherever every operand's step allows it (step[a] = step[a+1] * dims[a+1]). */
function coalesce(dims: readonly number[], steps: number[][]): { dims: number[]; steps: number[][] } {
  const d = [...dims];
  const s = steps.map((x) => [...x]);
  for (let a = d.length - 2; a >= 0; a--) {
    if (s.every((x) => x[a] === x[a + 1]! * d[a + 1]!)) {
      d[a + 1] = d[a]! * d[a + 1]!;
      d.splice(a, 1);
      for (const x of s) x.splice(a, 1);
    }
  }
  return { dims: d, steps: s };
}

/** The broadcast output of `operands` as rows: row r of length `len` reads operand i at `starts[i][r] + j * steps[i]`. */
export interface BroadcastRows {
  dims: number[];
  len: number;
  starts: Int32Array[];
  steps: number[];
}

export function broadcastRows(operands: Array<{ dims: readonly number[] }>, dims = broadcastDims(operands.map((t) => [...t.dims]))): BroadcastRows {
  const c = coalesce(dims, operands.map((t) => broadcastSteps(t.dims, dims)));
  const rank = c.dims.length;
  const outer = c.dims.slice(0, -1);
  return {
    dims,
    len: rank ? c.dims[rank - 1]! : 1,
    starts: c.steps.map((st) => stridedOffsets(outer, st.slice(0, -1))),
    steps: c.steps.map((st) => (rank ? st[rank - 1]! : 0)),
  };
}

export function arith(op: Arith, a: F64, b: F64): F64 {
  const { dims, len, starts, steps } = broadcastRows([a, b]);
  const out = array(dims);
  if (!out.data.length) return out;
  const [rowsA, rowsB] = starts as [Int32Array, Int32Array];
  const [ia, ib] = steps as [number, number];
  const x = a.data;
  const y = b.data;
  const o = out.data;
  for (let r = 0; r < rowsA.length; r++) {
    const fa = rowsA[r]!;
    const fb = rowsB[r]!;
    const to = r * len;
    switch (op) {
      case 'add': for (let j = 0; j < len; j++) o[to + j] = x[fa + j * ia]! + y[fb + j * ib]!; break;
      case 'sub': for (let j = 0; j < len; j++) o[to + j] = x[fa + j * ia]! - y[fb + j * ib]!; break;
      case 'mul': for (let j = 0; j < len; j++) o[to + j] = x[fa + j * ia]! * y[fb + j * ib]!; break;
      case 'div': for (let j = 0; j < len; j++) o[to + j] = x[fa + j * ia]! / y[fb + j * ib]!; break;
      case 'greater': for (let j = 0; j < len; j++) o[to + j] = x[fa + j * ia]! > y[fb + j * ib]! ? 1 : 0; break;
    }
  }
  return out;
}

/** ONNX Where: `a` where `cond` is non-zero, else `b`. */
export function where(cond: F64, a: F64, b: F64): F64 {
  const { dims, len, starts, steps } = broadcastRows([cond, a, b]);
  const out = array(dims);
  if (!out.data.length) return out;
  const [rc, ra, rb] = starts as [Int32Array, Int32Array, Int32Array];
  const [ic, ia, ib] = steps as [number, number, number];
  const c = cond.data;
  const x = a.data;
  const y = b.data;
  const o = out.data;
  for (let r = 0; r < rc.length; r++) {
    const fc = rc[r]!;
    const fa = ra[r]!;
    const fb = rb[r]!;
    const to = r * len;
    for (let j = 0; j < len; j++) o[to + j] = c[fc + j * ic] !== 0 ? x[fa + j * ia]! : y[fb + j * ib]!;
  }
  return out;
}
