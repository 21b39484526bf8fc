/**
 * Checks for the metadata a model file carries (.pt dict entries, safetensors `__metadata__`, ONNX
 * metadata_props). These values size arrays (nc, imgsz), become file and folder names (family,
 * size) and are drawn into SVG labels (names, escaped there), so every field the package uses is validated at load
 * and a bad one fails with an error naming the field, never later as a size error or a crash.
 */
import { LibreYOLOError } from '../errors.ts';
import { limit, LIMITS, type LimitName } from '../util/limits.ts';

/** Family, size and task values: short identifiers that are safe as parts of a file name. */
const TOKEN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** A UTF-16 surrogate without its partner: not a character, and not encodable as UTF-8 or XML. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const MAX_NAME_LENGTH = 256;

/** A value as it may appear in a message: quoted, control characters escaped, cut short. */
export function shown(v: unknown): string {
  let s: string;
  try {
    s = typeof v === 'bigint' ? `${v}` : JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** "set LIBREYOLO_MAX_IMGSZ or setLimits({ imgsz }) to allow more": short, for the middle of a message. */
export function raiseWith(name: LimitName): string {
  return `set ${LIMITS[name].env} or setLimits({ ${name} }) to allow more`;
}

export function metadataError(source: string, field: string, why: string): LibreYOLOError {
  const advice = 'Re-export or re-save the model with LibreYOLO; the file is damaged or was not written by it.';
  return new LibreYOLOError('model_metadata_invalid', `Cannot load ${source}: metadata field '${field}' ${why}. ${advice}`, { suggestion: advice });
}

/** A short identifier (model_family, size, task). */
export function checkToken(v: unknown, field: string, source: string): string {
  if (typeof v !== 'string') throw metadataError(source, field, `should be a string, got ${shown(v)}`);
  if (!TOKEN.test(v)) throw metadataError(source, field, `is ${shown(v)}: expected letters, digits, '.', '_' or '-' (at most 64)`);
  return v;
}

/** Whole number from a number, bigint or decimal string; NaN when it is none of those. */
function wholeNumber(v: unknown): number {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number') return Number.isInteger(v) ? v : NaN;
  if (typeof v === 'string' && /^\s*\d{1,16}\s*$/.test(v)) return Number(v);
  return NaN;
}

/** A positive whole number no larger than the limit (imgsz: LIBREYOLO_MAX_IMGSZ, nc: LIBREYOLO_MAX_CLASSES). */
export function checkCount(v: unknown, field: string, source: string, cap: LimitName & ('imgsz' | 'classes')): number {
  const n = wholeNumber(v);
  if (!Number.isSafeInteger(n) || n < 1) throw metadataError(source, field, `should be a positive whole number, got ${shown(v)}`);
  const max = limit(cap);
  if (n > max) throw metadataError(source, field, `is ${n}, over the limit of ${max} (${raiseWith(cap)})`);
  return n;
}

/**
 * A class name: a string of whole characters (no lone UTF-16 surrogate, which no text encoding can
 * carry), of sane length. Control and bidi characters load, as in the original: every place a name
 * is written escapes them (SVG labels, terminal lines: util/text.ts printable; JSON as JSON).
 */
function checkClassName(name: unknown, field: string, source: string): string {
  if (typeof name !== 'string') throw metadataError(source, field, `should be a string, got ${shown(name)}`);
  if (LONE_SURROGATE.test(name)) throw metadataError(source, field, `is ${shown(name)}, which contains broken Unicode (a lone surrogate)`);
  if (name.length > MAX_NAME_LENGTH) throw metadataError(source, field, `is ${name.length} characters long (at most ${MAX_NAME_LENGTH})`);
  return name;
}

/**
 * `names` as id -> name, from a dict with int (or numeric string) keys, a list, or their JSON text.
 * With `nc`, the ids must be exactly 0..nc-1 (one name per output class).
 */
export function checkNames(v: unknown, source: string, nc?: number, field = 'names'): Record<number, string> {
  let value = v;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      throw metadataError(source, field, `is not valid JSON (${shown(v)})`);
    }
  }
  let pairs: [unknown, unknown][];
  if (value instanceof Map) pairs = [...value.entries()];
  else if (Array.isArray(value)) pairs = value.map((x, i) => [i, x]);
  else if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value) && Object.getPrototypeOf(value) === Object.prototype) pairs = Object.entries(value);
  else throw metadataError(source, field, `should be a dict {int: str} or a list of str, got ${shown(value)}`);
  const max = limit('classes');
  if (pairs.length > max) throw metadataError(source, field, `has ${pairs.length} entries, over the limit of ${max} (${raiseWith('classes')})`);
  const out: Record<number, string> = {};
  for (const [k, name] of pairs) {
    const i = typeof k === 'string' ? (/^\d{1,9}$/.test(k) ? Number(k) : NaN) : wholeNumber(k);
    if (!Number.isSafeInteger(i) || i < 0) throw metadataError(source, field, `has the key ${shown(k)}; keys must be class ids 0, 1, 2, ...`);
    if (Object.hasOwn(out, i)) throw metadataError(source, field, `has class id ${i} twice`);
    out[i] = checkClassName(name, `${field}[${i}]`, source);
  }
  if (nc !== undefined) checkNamesCover(out, nc, source, field);
  return out;
}

/** The ids of `names` are exactly 0..nc-1. */
export function checkNamesCover(names: Record<number, string>, nc: number, source: string, field = 'names'): void {
  const ids = Object.keys(names).map(Number);
  if (ids.length !== nc) throw metadataError(source, field, `has ${ids.length} entries, but the model predicts ${nc} classes`);
  const stray = ids.find((i) => i >= nc);
  if (stray !== undefined) throw metadataError(source, field, `has class id ${stray}, but the model's ids are 0..${nc - 1}`);
}
