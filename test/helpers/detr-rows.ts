/**
 * Comparing DETR outputs with a reference whose query order may differ at near ties: top-k sets
 * checked per image (a differing slot only where the two tokens' reference scores are within a
 * tolerance), then output rows paired by the token each query came from.
 */
import type { DetectionSet } from '../../src/models/registry.ts';

export function maxAbsDiff(actual: ArrayLike<number | bigint>, expected: ArrayLike<number | bigint>): number {
  if (actual.length !== expected.length) throw new Error(`length ${actual.length} != ${expected.length}`);
  let m = 0;
  for (let k = 0; k < expected.length; k++) {
    const d = Math.abs(Number(actual[k]) - Number(expected[k]));
    if (Number.isNaN(d)) return NaN;
    m = Math.max(m, d);
  }
  return m;
}

/**
 * Positions where the port's proposal order differs from the reference; fails unless the two sets
 * are equal per image and every differing pair of tokens has reference scores within `tieTol`.
 */
export function nearTieSwaps(got: BigInt64Array, want: BigInt64Array, refScores: Float32Array, batch: number, tieTol: number): number {
  return nearTieSlots(got, want, refScores, batch, tieTol).length;
}

/** The `(image, slot)` positions of nearTieSwaps. */
export function nearTieSlots(got: BigInt64Array, want: BigInt64Array, refScores: Float32Array, batch: number, tieTol: number): Array<[number, number]> {
  const k = want.length / batch;
  const n = refScores.length / batch;
  const swaps: Array<[number, number]> = [];
  for (let img = 0; img < batch; img++) {
    const g = Array.from(got.subarray(img * k, (img + 1) * k), Number);
    const w = Array.from(want.subarray(img * k, (img + 1) * k), Number);
    if ([...g].sort((a, b) => a - b).join() !== [...w].sort((a, b) => a - b).join()) throw new Error(`image ${img}: the top-${k} proposal sets differ`);
    for (let p = 0; p < k; p++) {
      if (g[p] === w[p]) continue;
      const gap = Math.abs(refScores[img * n + g[p]!]! - refScores[img * n + w[p]!]!);
      if (gap > tieTol) throw new Error(`image ${img} slot ${p}: token ${g[p]} instead of ${w[p]}, reference scores ${gap.toExponential(2)} apart (not a near tie)`);
      swaps.push([img, p]);
    }
  }
  return swaps;
}

/**
 * For each port query row (image-major), the reference row holding the same proposal token: the
 * decoder is permutation-equivariant over queries in eval, so this pairs rows exactly. Call after
 * nearTieSlots has accepted the sets.
 */
export function pairRowsByToken(got: BigInt64Array, want: BigInt64Array, batch: number): number[] {
  const k = want.length / batch;
  const rows: number[] = [];
  for (let img = 0; img < batch; img++) {
    const where = new Map<bigint, number>();
    for (let p = 0; p < k; p++) where.set(want[img * k + p]!, img * k + p);
    for (let p = 0; p < k; p++) {
      const r = where.get(got[img * k + p]!);
      if (r === undefined) throw new Error(`image ${img}: token ${got[img * k + p]} is not among the reference proposals`);
      rows.push(r);
    }
  }
  return rows;
}

/** Max |got - want| over rows of `width` values, port row r compared with reference row `pairs[r]`. */
export function maxAbsDiffPaired(got: Float32Array, want: Float32Array, width: number, pairs: number[]): number {
  let m = 0;
  pairs.forEach((r, p) => {
    for (let c = 0; c < width; c++) {
      const d = Math.abs(got[p * width + c]! - want[r * width + c]!);
      if (Number.isNaN(d)) m = NaN;
      else m = Math.max(m, d);
    }
  });
  return m;
}

/**
 * Every reference detection has its own port detection with the same class, a box within `boxTol`
 * px and a score within `scoreTol`; the counts are equal (detection lists compared as sets).
 */
export function assertSameDetectionSet(got: DetectionSet, boxes: Float32Array, scores: Float32Array, classes: BigInt64Array, boxTol: number, scoreTol: number): void {
  if (got.conf.length !== scores.length) throw new Error(`detection count ${got.conf.length} != ${scores.length}`);
  const used = new Set<number>();
  for (let r = 0; r < scores.length; r++) {
    let match = -1;
    for (let p = 0; p < got.conf.length && match < 0; p++) {
      if (used.has(p) || got.cls[p] !== Number(classes[r])) continue;
      let d = 0;
      for (let c = 0; c < 4; c++) d = Math.max(d, Math.abs(got.xyxy[p * 4 + c]! - boxes[r * 4 + c]!));
      if (d <= boxTol && Math.abs(got.conf[p]! - scores[r]!) <= scoreTol) match = p;
    }
    if (match < 0) throw new Error(`reference detection ${r} (class ${classes[r]}, score ${scores[r]}) has no port match within ${boxTol} px / ${scoreTol}`);
    used.add(match);
  }
}
