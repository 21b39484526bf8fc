/** Numeric comparison of detector outputs `[B, 4+nc, A]`: box rows vs score rows. */
import type { HostTensor } from '../../src/graph/tensor.ts';

/**
 * `skipAnchors` leaves out whole columns, keyed `image * A + anchor` (a DETR query slot whose
 * proposal traded places with a near-tied one holds another object's values).
 */
export function maxErrors(actual: HostTensor, expected: HostTensor, options: { skipAnchors?: ReadonlySet<number> } = {}): { box: number; score: number } {
  if (actual.dims.join(',') !== expected.dims.join(',')) throw new Error(`shape [${actual.dims}] != [${expected.dims}]`);
  const [, rows, anchors] = expected.dims as [number, number, number];
  const a = actual.data as Float32Array;
  const e = expected.data as Float32Array;
  const skip = options.skipAnchors;
  let box = 0;
  let score = 0;
  for (let i = 0; i < e.length; i++) {
    if (skip?.has(Math.floor(i / (rows * anchors)) * anchors + (i % anchors))) continue;
    const d = Math.abs(a[i]! - e[i]!);
    if (Number.isNaN(d)) return { box: NaN, score: NaN };
    if (Math.floor(i / anchors) % rows < 4) box = Math.max(box, d); else score = Math.max(score, d);
  }
  return { box, score };
}

/** Relative L2 error ||a - b|| / ||b||. */
export function relL2(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let k = 0; k < b.length; k++) {
    num += (a[k]! - b[k]!) ** 2;
    den += b[k]! ** 2;
  }
  return Math.sqrt(num / Math.max(den, 1e-30));
}
