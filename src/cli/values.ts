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
