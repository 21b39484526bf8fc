/**
 * Numbers and names in messages as the original formats them (Python format specs): fixed decimals
 * rounded half to even on exact ties, percentages, `round()`, and `repr()` of a string.
 */

/** `{x:.Nf}`: toFixed, except that an exact tie rounds to the even digit as Python does. */
export function fixed(x: number, digits: number): string {
  const scaled = x * 10 ** digits;
  const floor = Math.floor(scaled);
  if (scaled - floor === 0.5 && floor % 2 === 0 && Number.isFinite(scaled)) return (floor / 10 ** digits).toFixed(digits);
  return x.toFixed(digits);
}

/** `{x:.N%}`. */
export const percent = (x: number, digits: number): string => `${fixed(x * 100, digits)}%`;

/** `round(x, n)`. */
export const round = (x: number, digits: number): number => Number(fixed(x, digits));

/** `{x:g}` for the thresholds the messages quote (3.0 -> 3, 0.95 -> 0.95). */
export const general = (x: number): string => String(Number(x.toPrecision(6)));

/** `repr()` of a string: single quotes unless it holds one and no double quote. */
export function pyRepr(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
  return q + (q === "'" ? body.replace(/'/g, "\\'") : body) + q;
}
