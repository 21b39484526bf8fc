/** Small statistics with the original's conventions (population stdev, half-even percentile index). */
import { pyRound } from './pyfmt.ts';

export const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Population standard deviation (Python `statistics.pstdev`). */
export function pstdev(xs: readonly number[]): number {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / xs.length);
}

/** Nearest-rank on the index `round(q/100 * (n-1))` (half-even), rounded to 3 dp; null when empty. */
export function percentile(xs: readonly number[], q: number): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const k = Math.min(s.length - 1, pyRound((q / 100) * (s.length - 1)));
  return pyRound(s[k]!, 3);
}
