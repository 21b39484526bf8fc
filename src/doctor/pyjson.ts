/**
 * JSON as the original prints it (`json.dumps` defaults): `", "` and `": "` separators, non-ASCII as
 * `\uXXXX`, floats with a fraction (`153.0`). Objects are Maps, so keys keep their order even when
 * they look like numbers (`{"cat": 153, "5": 1}`; a plain object would move "5" first).
 */

/** A number the original holds as a float: printed with a fraction even when it is whole. */
export class PyFloat {
  constructor(readonly value: number) {}
}

export type PyValue = null | boolean | number | string | PyFloat | PyValue[] | Map<string, PyValue>;

function str(s: string): string {
  return JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function float(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${x}.0`;
  const s = String(x);
  // Python switches to an exponent below 1e-4 (JS: 1e-6); `1e-05`, not `0.00001`.
  if (Math.abs(x) < 1e-4 && !s.includes('e')) {
    const [m, e] = x.toExponential().split('e') as [string, string];
    return `${m}e${e[0]}${e.slice(1).padStart(2, '0')}`;
  }
  return s.replace(/e([+-])(\d)$/, 'e$10$2');
}

export function pyJson(v: PyValue): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : float(v);
  if (typeof v === 'string') return str(v);
  if (v instanceof PyFloat) return float(v.value);
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  return `{${[...v].map(([k, x]) => `${str(k)}: ${pyJson(x)}`).join(', ')}}`;
}
