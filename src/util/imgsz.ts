/** Input-size arguments (`imgsz`) as every entry point accepts them. */
import { LibreYOLOError } from '../errors.ts';
import { limit, raiseAdvice } from './limits.ts';
import { showValue } from './options.ts';
import { defaultWarn, type Warn } from './warn.ts';
import type { Rule } from './options.ts';

/**
 * Refuses an input side over the `imgsz` limit (default 4096) before anything is allocated: the input
 * tensor and activations grow with its square, so 20000 would need tens of GB.
 */
export function checkImgszLimit(sides: readonly number[], given: unknown = sides.length === 1 ? sides[0] : sides): void {
  const max = limit('imgsz');
  if (sides.every((x) => x <= max)) return;
  throw new LibreYOLOError('invalid_imgsz',
    `imgsz ${typeof given === 'string' ? given : JSON.stringify(given)} is over the maximum of ${max} per side (memory grows with the square of imgsz). ` +
    `Use a smaller imgsz, or tiling=true to run a large image as tiles. ${raiseAdvice('imgsz')}`);
}

/** `imgsz` as `[h, w]`, each rounded up to the model's stride (with a warning). */
export function normalizeImgsz(v: unknown, stride: number, warn: Warn = defaultWarn): [number, number] | null {
  if (v === undefined || v === null) return null;
  const pair = typeof v === 'number' ? [v, v] : Array.isArray(v) && v.length === 2 ? v : null;
  if (!pair || !pair.every((x) => typeof x === 'number' && Number.isInteger(x) && x > 0)) {
    throw new LibreYOLOError('invalid_imgsz', `imgsz must be a positive integer or an [height, width] pair of positive integers (on the command line: 640, 480x640 or [480,640]), got ${showValue(v)}`);
  }
  checkImgszLimit(pair as number[], v);
  const rounded = pair.map((x: number) => Math.ceil(x / stride) * stride) as [number, number];
  if (rounded[0] !== pair[0] || rounded[1] !== pair[1]) {
    warn(`imgsz ${JSON.stringify(v)} is not a multiple of ${stride}; using [${rounded.join(', ')}].`);
  }
  return rounded;
}

/** `640`, `480x640` (height x width), `480,640` or `[480,640]` as a size; other text stays text (and is refused). */
export function imgszText(s: string): unknown {
  const parts = s.trim().replace(/^\[|\]$/g, '').split(/[xX,]/).map((p) => p.trim());
  if (!parts.every((p) => /^\d+$/.test(p)) || (parts.length !== 1 && parts.length !== 2)) return s;
  const nums = parts.map(Number);
  checkImgszLimit(nums, s); // named as typed: `imgsz 640x20000 is over ...`
  return nums.length === 1 ? nums[0] : nums;
}

/** The `imgsz` option as given (a side or [h, w]); rounding to the model's stride happens where the model is known. */
export const IMGSZ: Rule<number | [number, number]> = {
  want: 'a size: 640 or [480, 640] (480x640 on the command line)', form: 'value', fromText: imgszText,
  check(_key, v) {
    normalizeImgsz(v, 1, () => undefined);
    return v as number | [number, number];
  },
};
