/**
 * The one option layer: typed rules for option values, each mistake with one error shape, shared by
 * predict, export, train and track, by the library and the command line alike.
 *
 *   wrong type       config_type_error    `<key> must be an integer, got "abc"`
 *   out of range     config_range_error   `<key> must be >= 1, got 0`
 *   not a choice     config_range_error   `<key> must be one of a, b, c, got "x"`
 *   spelled twice    config_conflict      `max_det and maxDet are the same option: pass it once`
 *
 * A command-line value is text: `fromCli` turns the text a rule's type can read (`5`, `0.25`,
 * `true`, `0`) into that type, and leaves any other text as it is for the rule to refuse, so
 * `conf=abc` and `predict(src, { conf: 'abc' })` fail with the same code and message.
 */
import { LibreYOLOError } from '../errors.ts';

/** A value as an option message quotes it: strings, lists and objects as JSON, numbers as written. */
export function showValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v === undefined) return String(v);
  if (typeof v === 'function' || typeof v === 'symbol') return `a ${typeof v}`;
  try {
    const s = JSON.stringify(v);
    return s.length > 60 ? `${s.slice(0, 57)}...` : s;
  } catch {
    return String(v);
  }
}

export function optionTypeError(key: string, want: string, v: unknown): LibreYOLOError {
  return new LibreYOLOError('config_type_error', `${key} must be ${want}, got ${showValue(v)}`);
}

export function optionRangeError(key: string, want: string, v: unknown): LibreYOLOError {
  return new LibreYOLOError('config_range_error', `${key} must be ${want}, got ${showValue(v)}`);
}

/** How the command line takes an option: a flag (`save`, `save=false`) or a value (`conf=0.25`). */
export type CliForm = 'flag' | 'value';

/** One option's rule: what it must be, the check (returns the value as used), and its CLI form. */
export interface Rule<T> {
  /** `an integer >= 1`, for help text and messages. */
  readonly want: string;
  readonly form: CliForm;
  /** A number rule (checkpoints write such options as floats). */
  readonly float?: boolean;
  /** Command-line text as the value it spells (`'5'` -> 5); text it cannot read is returned unchanged. */
  fromText(s: string): unknown;
  check(key: string, v: unknown): T;
}

export interface Bounds {
  min?: number;
  max?: number;
  /** min / max themselves are outside. */
  minOpen?: boolean;
  maxOpen?: boolean;
  /** One value outside the bounds that is still accepted (batch -1: auto-batch), with what it means. */
  also?: { value: number; meaning: string };
}

/** `>= 1`, `> 0`, `in [0, 1]`, `in (0, 1)`, `in [0, 1)`, plus `(or -1 for auto-batch)`. */
export function boundsText(b: Bounds): string {
  const { min, max } = b;
  let s: string;
  if (min !== undefined && max !== undefined) s = `in ${b.minOpen ? '(' : '['}${min}, ${max}${b.maxOpen ? ')' : ']'}`;
  else if (min !== undefined) s = `${b.minOpen ? '>' : '>='} ${min}`;
  else if (max !== undefined) s = `${b.maxOpen ? '<' : '<='} ${max}`;
  else s = 'finite';
  return b.also ? `${s} (or ${b.also.value} for ${b.also.meaning})` : s;
}

function inBounds(n: number, b: Bounds): boolean {
  if (b.also && n === b.also.value) return true;
  if (!Number.isFinite(n)) return false;
  if (b.min !== undefined && (b.minOpen ? n <= b.min : n < b.min)) return false;
  if (b.max !== undefined && (b.maxOpen ? n >= b.max : n > b.max)) return false;
  return true;
}

const NUMBER_TEXT = /^\s*[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\s*$/i;

/** `5`, `-1`, `0.25`, `1e-3` as numbers. */
export const numberText = (s: string): unknown => (NUMBER_TEXT.test(s) ? Number(s) : s);

/** `true/1` and `false/0` (any case) as booleans. */
export function booleanText(s: string): unknown {
  if (/^(true|1)$/i.test(s.trim())) return true;
  if (/^(false|0)$/i.test(s.trim())) return false;
  return s;
}

const asText = (s: string): unknown => s;

/** A whole number (a JS number, never a boolean or a string), within `bounds`. */
export function integer(bounds: Bounds = {}): Rule<number> {
  const range = boundsText(bounds);
  return {
    want: range === 'finite' ? 'an integer' : `an integer ${range}`, form: 'value', fromText: numberText,
    check(key, v) {
      if (typeof v !== 'number' || !Number.isInteger(v)) throw optionTypeError(key, 'an integer', v);
      if (!inBounds(v, bounds)) throw optionRangeError(key, range, v);
      return v;
    },
  };
}

/** A finite number within `bounds` (NaN and Infinity are out of range). */
export function number(bounds: Bounds = {}): Rule<number> {
  const range = boundsText(bounds);
  return {
    want: range === 'finite' ? 'a finite number' : `a number ${range}`, form: 'value', fromText: numberText, float: true,
    check(key, v) {
      if (typeof v !== 'number') throw optionTypeError(key, 'a number', v);
      if (!inBounds(v, bounds)) throw optionRangeError(key, range, v);
      return v;
    },
  };
}

/** A number in [0, 1] (thresholds, probabilities). */
export const fraction = (): Rule<number> => number({ min: 0, max: 1 });

/** true or false; nothing else (the string 'false' is truthy, so it is refused, never coerced). */
export function boolean(): Rule<boolean> {
  return {
    want: 'true or false', form: 'flag', fromText: booleanText,
    check(key, v) {
      if (typeof v !== 'boolean') throw optionTypeError(key, 'true or false', v);
      return v;
    },
  };
}

/** One of `values`; with `anyCase`, matched case-insensitively and returned as the table spells it. */
export function choice<T extends string>(values: readonly T[], opts: { anyCase?: boolean } = {}): Rule<T> {
  const want = `one of ${values.join(', ')}`;
  return {
    want, form: 'value', fromText: asText,
    check(key, v) {
      const s = typeof v === 'string' ? v.trim() : null;
      const hit = s === null ? undefined : values.find((c) => (opts.anyCase ? c.toLowerCase() === s.toLowerCase() : c === s));
      if (hit === undefined) throw optionRangeError(key, want, v);
      return hit;
    },
  };
}

/** A non-empty string (a path, a name). */
export function text(want = 'a non-empty string'): Rule<string> {
  return {
    want, form: 'value', fromText: asText,
    check(key, v) {
      if (typeof v !== 'string' || v === '') throw optionTypeError(key, want, v);
      return v;
    },
  };
}

/** `rule`, or null (also from the YAML and CLI spellings `null` and `None`). */
export function nullable<T>(rule: Rule<T>): Rule<T | null> {
  return {
    want: `${rule.want} or null`, form: rule.form, fromText: (t) => rule.fromText(t), ...(rule.float ? { float: true } : {}),
    check(key, v) {
      if (v === null || v === 'null' || v === 'None') return null;
      return rule.check(key, v);
    },
  };
}

/**
 * A command-line (or YAML string) value as the rule reads it: `5` / `0.25` / `1e-3` as a number,
 * `true/false/1/0` (any case) as a boolean; anything else stays text, for the rule to refuse with
 * the same message the library gives for that text.
 */
export function fromCli(rule: Pick<Rule<unknown>, 'fromText'>, v: unknown): unknown {
  return typeof v === 'string' ? rule.fromText(v) : v;
}

/** `max_det` from `maxDet`; snake_case keys are unchanged. */
export const snakeKey = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** `maxDet` from `max_det`. */
export const camelKey = (k: string): string => k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * Options with camelCase keys spelled snake_case (the original's spelling, which the tables use):
 * `{ maxDet: 5 }` reads as `{ max_det: 5 }`. A key the table knows as it is stays as it is; an
 * unknown one is passed on unchanged for the caller to refuse or warn about in the user's spelling.
 * Undefined values are dropped. One option given in both spellings is refused.
 */
export function normalizeKeys(raw: Readonly<Record<string, unknown>>, known: (key: string) => boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const spelled = new Map<string, string>();
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    const key = known(k) ? k : known(snakeKey(k)) ? snakeKey(k) : k;
    const before = spelled.get(key);
    if (before !== undefined) {
      throw new LibreYOLOError('config_conflict', `${before} and ${k} are the same option: pass it once.`);
    }
    spelled.set(key, k);
    out[key] = v;
  }
  return out;
}
