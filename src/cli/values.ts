/** Value parsers for CLI options; bad values are usage errors (exit 2) with the option named. */
import { LibreYOLOError } from '../errors.ts';
import { checkImgszLimit } from '../util/imgsz.ts';

export function parseNumber(name: string): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) throw new LibreYOLOError('config_type_error', `${name} must be a number, got '${v}'`);
    return n;
  };
}

export function parseInteger(name: string): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!/^-?\d+$/.test(v.trim())) throw new LibreYOLOError('config_type_error', `${name} must be an integer, got '${v}'`);
    return n;
  };
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

/** `640`, `480x640` (height x width), `480,640` or `[480,640]`. */
export function parseImgsz(v: string): number | [number, number] {
  const s = v.trim().replace(/^\[|\]$/g, '');
  const parts = s.split(/[xX,]/).map((p) => p.trim());
  const nums = parts.map(Number);
  if (parts.some((p) => !/^\d+$/.test(p)) || (nums.length !== 1 && nums.length !== 2)) {
    throw new LibreYOLOError('invalid_imgsz', `Invalid imgsz '${v}': use 640, 480x640 (height x width) or [480,640].`);
  }
  checkImgszLimit(nums, v); // refused before the model loads
  return nums.length === 1 ? nums[0]! : [nums[0]!, nums[1]!];
}

/** `0`, `0,2` or `[0,2,5]`. */
export function parseClasses(v: string): number[] {
  const s = v.trim().replace(/^\[|\]$/g, '');
  const parts = s.split(',').map((p) => p.trim()).filter((p) => p !== '');
  if (!parts.length || parts.some((p) => !/^-?\d+$/.test(p))) throw new LibreYOLOError('config_type_error', `Invalid classes value: ${v}. Use class ids: 0, 0,2 or [0,2].`);
  return parts.map(Number);
}

export function checkRange(name: string, value: number | undefined, min: number, max = Infinity): void {
  if (value === undefined) return;
  if (value < min || value > max) {
    const range = max === Infinity ? `>= ${min}` : `in [${min.toFixed(1)}, ${max.toFixed(1)}]`;
    throw new LibreYOLOError('config_range_error', `${name} must be ${range}, got ${value}`);
  }
}
