/**
 * Float64 Add, Sub, Mul and Div over broadcast operands for the reference interpreter. The output
 * is walked as rows after merging the axes both operands step through alike, so a same-shape or
 * trailing-broadcast operation is a few long rows; each op has its own loop (a shared loop calling
 * a closure per element would not be inlined).
 */
import { array, broadcastDims, broadcastSteps, stridedOffsets, type F64 } from './array.ts';

export type Arith = 'add' | 'sub' | 'mul' | 'div';

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

export function arith(op: Arith, a: F64, b: F64): F64 {
  const dims = broadcastDims([a.dims, b.dims]);
  const out = array(dims);
  if (!out.data.length) return out;
  const c = coalesce(dims, [broadcastSteps(a.dims, dims), broadcastSteps(b.dims, dims)]);
  const rank = c.dims.length;
  const len = rank ? c.dims[rank - 1]! : 1;
  const [sa, sb] = [c.steps[0]!, c.steps[1]!];
  const ia = rank ? sa[rank - 1]! : 0;
  const ib = rank ? sb[rank - 1]! : 0;
  const rowsA = stridedOffsets(c.dims.slice(0, -1), sa.slice(0, -1));
  const rowsB = stridedOffsets(c.dims.slice(0, -1), sb.slice(0, -1));
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
    }
  }
  return out;
}
