/**
 * Rectangular linear sum assignment (minimum cost, every row or every column matched, whichever is
 * fewer) by shortest augmenting paths with dual potentials (Jonker-Volgenant, as Crouse 2016
 * describes it): O(n^2 m). It reproduces `scipy.optimize.linear_sum_assignment` including its choice
 * among tied optima: a tall matrix is solved transposed, the free columns are scanned from the last,
 * a tie for the nearest column goes to an unassigned one, and the pairs come back sorted by row.
 */

export interface Assignment {
  /** Row indices, ascending. */
  rows: number[];
  /** The column assigned to each row. */
  cols: number[];
}

/** `cost` row-major `[nRows, nCols]`; NaN or -Infinity entries are an error (as scipy). */
export function linearSumAssignment(cost: ArrayLike<number>, nRows: number, nCols: number): Assignment {
  if (cost.length !== nRows * nCols) throw new Error(`linearSumAssignment: ${cost.length} costs for a ${nRows}x${nCols} matrix`);
  if (nRows === 0 || nCols === 0) return { rows: [], cols: [] };
  const transpose = nCols < nRows;
  const n = transpose ? nCols : nRows; // rows of the matrix solved (n <= m)
  const m = transpose ? nRows : nCols;
  const c = new Float64Array(n * m);
  for (let r = 0; r < nRows; r++) {
    for (let k = 0; k < nCols; k++) {
      const v = cost[r * nCols + k]!;
      if (Number.isNaN(v) || v === -Infinity) throw new Error('linearSumAssignment: the cost matrix holds NaN or -inf');
      if (transpose) c[k * m + r] = v; else c[r * m + k] = v;
    }
  }
  const colOf = solve(c, n, m);
  if (!transpose) return { rows: Array.from({ length: n }, (_, r) => r), cols: Array.from(colOf) };
  // Back in the caller's orientation the solved rows are columns: order the pairs by their partner.
  const order = Array.from({ length: n }, (_, r) => r).sort((a, b) => colOf[a]! - colOf[b]!);
  return { rows: order.map((r) => colOf[r]!), cols: order };
}

/** Assigns every row of `c` (`n <= m`); returns the column of each row. */
function solve(c: Float64Array, n: number, m: number): Int32Array {
  const u = new Float64Array(n);
  const v = new Float64Array(m);
  const colOf = new Int32Array(n).fill(-1);
  const rowOf = new Int32Array(m).fill(-1);
  const pred = new Int32Array(m).fill(-1);
  const dist = new Float64Array(m);
  const rowSeen = new Uint8Array(n);
  const colSeen = new Uint8Array(m);
  const free = new Int32Array(m);

  for (let start = 0; start < n; start++) {
    // Dijkstra over reduced costs from `start` until a free column is reached.
    for (let k = 0; k < m; k++) free[k] = m - 1 - k;
    let nFree = m;
    rowSeen.fill(0);
    colSeen.fill(0);
    dist.fill(Infinity);
    let row = start;
    let reach = 0;
    let sink = -1;
    while (sink < 0) {
      rowSeen[row] = 1;
      let best = -1;
      let bestDist = Infinity;
      for (let k = 0; k < nFree; k++) {
        const j = free[k]!;
        const d = reach + c[row * m + j]! - u[row]! - v[j]!;
        if (d < dist[j]!) {
          dist[j] = d;
          pred[j] = row;
        }
        if (dist[j]! < bestDist || (dist[j] === bestDist && rowOf[j] === -1)) {
          bestDist = dist[j]!;
          best = k;
        }
      }
      if (bestDist === Infinity) throw new Error('linearSumAssignment: the cost matrix is infeasible');
      reach = bestDist;
      const j = free[best]!;
      colSeen[j] = 1;
      free[best] = free[--nFree]!;
      if (rowOf[j] === -1) sink = j; else row = rowOf[j]!;
    }
    // Potentials keep every reduced cost >= 0 and the matched ones at 0.
    u[start] += reach;
    for (let r = 0; r < n; r++) if (rowSeen[r] && r !== start) u[r] += reach - dist[colOf[r]!]!;
    for (let j = 0; j < m; j++) if (colSeen[j]) v[j] -= reach - dist[j]!;
    // Flip the path.
    for (let j = sink; ;) {
      const r = pred[j]!;
      rowOf[j] = r;
      const prev = colOf[r]!;
      colOf[r] = j;
      if (r === start) break;
      j = prev;
    }
  }
  return colOf;
}
