/** Box overlap costs and the thresholded assignment ByteTrack matches with. */
import { linearSumAssignment } from '../util/lsap.ts';

export type Box = readonly [number, number, number, number];

/** IoU of two xyxy boxes (no +1 pixel; the union is floored at 1e-6). */
export function iou(a: Box, b: Box): number {
  const iw = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
  const ih = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const inter = iw * ih;
  const union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return inter / Math.max(union, 1e-6);
}

/** `1 - IoU` for every (row, column) pair, row-major. */
export function iouCost(rows: readonly Box[], cols: readonly Box[]): Float64Array {
  const cost = new Float64Array(rows.length * cols.length);
  for (let i = 0; i < rows.length; i++) for (let j = 0; j < cols.length; j++) cost[i * cols.length + j] = 1 - iou(rows[i]!, cols[j]!);
  return cost;
}

export interface Matching {
  /** `[row, col]` pairs in ascending row order. */
  matches: Array<[number, number]>;
  unmatchedRows: number[];
  unmatchedCols: number[];
}

/**
 * Minimum-total-cost assignment on the raw costs, then pairs costing more than `thresh` are dropped.
 * Solving first and filtering after is the original's rule: masking expensive pairs before solving,
 * greedy matching and a cost-limited solver each pick different pairs in some scenes. A matrix with a
 * non-finite entry matches nothing.
 */
export function assign(cost: Float64Array, nRows: number, nCols: number, thresh: number): Matching {
  const matches: Array<[number, number]> = [];
  const rowUsed = new Uint8Array(nRows);
  const colUsed = new Uint8Array(nCols);
  if (nRows > 0 && nCols > 0 && cost.every(Number.isFinite)) {
    const { rows, cols } = linearSumAssignment(cost, nRows, nCols);
    for (let k = 0; k < rows.length; k++) {
      const r = rows[k]!, c = cols[k]!;
      if (cost[r * nCols + c]! > thresh) continue;
      matches.push([r, c]);
      rowUsed[r] = 1;
      colUsed[c] = 1;
    }
  }
  const unmatched = (used: Uint8Array): number[] => Array.from(used.keys()).filter((i) => !used[i]);
  return { matches, unmatchedRows: unmatched(rowUsed), unmatchedCols: unmatched(colUsed) };
}
