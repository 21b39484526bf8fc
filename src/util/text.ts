/** Small text helpers shared by messages: typo distance and the nearest known word. */

/** Levenshtein distance (insertions, deletions and substitutions each cost 1). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/**
 * The candidate nearest to `word` when it looks like a typo of it (distance at most a third of the
 * word's length, and at least 1), else undefined.
 */
export function closestWord(word: string, candidates: Iterable<string>): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestDist = Infinity;
  for (const c of candidates) {
    const d = editDistance(lower, c.toLowerCase());
    if (d < bestDist) [best, bestDist] = [c, d];
  }
  return bestDist <= Math.max(1, Math.floor(word.length / 3)) ? best : undefined;
}

/**
 * Characters that would garble a terminal line, an SVG label or a page if written as they are: C0
 * and C1 controls, and the bidirectional controls that reorder the text around them (U+202E
 * turns `abc` into `cba`).
 */
// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `s` with each control or bidi character written as its escape (`a\x01b` -> `a\u0001b`), the rest as it is. */
export function printable(s: string): string {
  return s.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
