/**
 * Value parsers for the flags of commands without an option table (val, track, data, ui, ...):
 * bad values are usage errors (exit 2) with the option named, through the same rules and messages
 * as the library's options (util/options.ts).
 */
import { LibreYOLOError } from '../errors.ts';
import { PREDICT_OPTIONS } from '../predict/options.ts';
import { IMGSZ } from '../util/imgsz.ts';
import { integer, number } from '../util/options.ts';
import { ruleParser } from './option-flags.ts';

/** A number flag, read and refused as the library's option rules do (`conf must be a number, got "abc"`). */
export function parseNumber(name: string): (v: string) => number {
  return ruleParser(name, number()) as (v: string) => number;
}

/** An integer flag (`batch must be an integer, got 2.5`). */
export function parseInteger(name: string): (v: string) => number {
  return ruleParser(name, integer()) as (v: string) => number;
}

/**
 * An integer option with a floor (`--runs` >= 2, `--top` >= 0): below it is refused (exit 2) rather
 * than clamped behind the user's back. `also` admits one more value (`--batch -1`: auto-batch).
 */
export function parseIntegerAtLeast(name: string, min: number, also?: number): (v: string) => number {
  const int = parseInteger(name);
  return (v) => {
    const n = int(v);
    if (n < min && n !== also) {
      throw new LibreYOLOError('config_range_error', `${name} must be an integer >= ${min}${also === undefined ? '' : ` (or ${also})`}, got ${v}`);
    }
    return n;
  };
}

/**
 * For a count the original raises to a floor instead of refusing (profile's `--runs` to 2, `--warmup`
 * to 0): the same floor here, with a warning so the run is not quietly other than asked.
 */
export function raisedToFloor(name: string, value: number, floor: number, warn: (message: string) => void): number {
  if (value >= floor) return value;
  warn(`${name} ${value} is below its minimum of ${floor}; using ${floor}`);
  return floor;
}

/** `640`, `480x640` (height x width), `480,640` or `[480,640]`: the imgsz option's rule. */
export const parseImgsz = ruleParser('imgsz', IMGSZ) as (v: string) => number | [number, number];

/** `0`, `0,2` or `[0,2,5]`: the classes option's rule. */
export const parseClasses = ruleParser('classes', PREDICT_OPTIONS.classes.rule) as (v: string) => number[];

/** A value already parsed, checked against bounds with the option layer's range message. */
export function checkRange(name: string, value: number | undefined, min: number, max?: number): void {
  if (value === undefined) return;
  const bounds = max === undefined ? { min } : { min, max };
  number(bounds).check(name, value);
}
