/**
 * Python-compatible number formatting. The original prints its profiles with Python's `round`,
 * `format` and `str`, which round half-to-even on the exact binary value and print floats as their
 * shortest repr (`100.0`, `1e-05`); JS `toFixed`/`Math.round` round ties up and drop the `.0`, so
 * every rounded or printed number in this package goes through here.
 */

/** `|x| * 10^n` rounded half-to-even on the exact double value. */
function scaledHalfEven(x: number, n: number): bigint {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(x));
  const bits = view.getBigUint64(0);
  const expBits = Number((bits >> 52n) & 0x7ffn);
  const frac = bits & ((1n << 52n) - 1n);
  // |x| = mant * 2^exp exactly.
  const mant = expBits === 0 ? frac : frac | (1n << 52n);
  const exp = (expBits === 0 ? 1 : expBits) - 1075;
  const num = mant * 10n ** BigInt(n);
  if (exp >= 0) return num << BigInt(exp);
  const den = 1n << BigInt(-exp);
  let q = num / den;
  const twice = (num % den) * 2n;
  if (twice > den || (twice === den && q % 2n === 1n)) q += 1n;
  return q;
}

const isNegative = (x: number): boolean => x < 0 || Object.is(x, -0);

/** Python `round(x, n)` (n >= 0): half-to-even on the exact binary value. */
export function pyRound(x: number, n = 0): number {
  if (!Number.isFinite(x)) return x;
  const v = Number(`${scaledHalfEven(x, n)}e-${n}`);
  return isNegative(x) ? -v : v;
}

/** Python `format(x, '.nf')`, with an optional `+` sign flag. */
export function pyFixed(x: number, n: number, plus = false): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return `${x < 0 ? '-' : plus ? '+' : ''}inf`;
  const digits = scaledHalfEven(x, n).toString().padStart(n + 1, '0');
  const body = n > 0 ? `${digits.slice(0, -n)}.${digits.slice(-n)}` : digits;
  return `${isNegative(x) ? '-' : plus ? '+' : ''}${body}`;
}

/** Python `repr(float)`: shortest round-trip digits, `.0` on integral values, exponent outside [1e-4, 1e16). */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, e] = x.toExponential().split('e') as [string, string];
  const exp = Number(e);
  if (exp < -4 || exp >= 16) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  const s = String(x);
  return /[.e]/.test(s) ? s : `${s}.0`;
}

/** Metric keys that are Python ints in the original (everything else numeric is a float). */
const INT_KEY = /(^|_)(kernels|ops)$|^(kernels_per_step|unique_kernels|launches_per_step|cuda_mallocs_per_step|ops_per_step|img_per_s_n|n|real_steps|count_per_step|batch)$/;

export function isIntKey(key: string): boolean {
  return INT_KEY.test(key);
}

/** Python `str(value)` for a JSON value, knowing whether a number is an int or a float by its key. */
export function pyStr(value: unknown, key = ''): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return isIntKey(key) && Number.isInteger(value) ? String(value) : pyFloat(value);
  if (typeof value === 'string') return value;
  return pyJson(value);
}

/** Python `str(float)` for a float field. */
export const pyF = (value: unknown): string => (typeof value === 'number' ? pyFloat(value) : pyStr(value));

/** The value, or `?` when it is falsy (Python `x or '?'`). */
export function orQ(value: unknown, key = ''): string {
  return value ? pyStr(value, key) : '?';
}

export const ljust = (s: string, w: number): string => s.padEnd(w);
export const rjust = (s: string, w: number): string => s.padStart(w);

/** Python `json.dumps(value, indent=?)`: `", "`/`": "` separators and ASCII-only output; non-finite numbers throw. */
export function pyJson(value: unknown, indent?: number): string {
  const ascii = (s: string): string => JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  const walk = (v: unknown, depth: number): string => {
    if (v === null || v === undefined) return 'null';
    // Unlike Python's json.dumps, never NaN/Infinity: they are not JSON and no reader takes them.
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new Error(`${v} is not JSON: refusing to write a non-finite number`);
      return JSON.stringify(v);
    }
    if (typeof v === 'boolean') return String(v);
    if (typeof v === 'string') return ascii(v);
    const pad = indent === undefined ? '' : `\n${' '.repeat(indent * (depth + 1))}`;
    const close = indent === undefined ? '' : `\n${' '.repeat(indent * depth)}`;
    const sep = indent === undefined ? ', ' : ',';
    if (Array.isArray(v)) {
      if (!v.length) return '[]';
      return `[${pad}${v.map((x) => walk(x, depth + 1)).join(sep + pad)}${close}]`;
    }
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
    if (!entries.length) return '{}';
    return `{${pad}${entries.map(([k, x]) => `${ascii(k)}: ${walk(x, depth + 1)}`).join(sep + pad)}${close}}`;
  };
  return walk(value, 0);
}
