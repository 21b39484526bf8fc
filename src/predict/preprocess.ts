/** Per-image network input plans: the family's own preprocessing, or the default letterbox. */
import type { RgbImage } from '../data/image.ts';
import { letterboxGeometry, letterboxInto } from '../data/letterbox.ts';
import type { ModelFamily, PreprocessPlan } from '../models/registry.ts';

/** Letterbox onto the `[h, w]` canvas (top-left, 114 padding): every image gets the same shape. */
export function letterboxPlan(image: RgbImage, size: [number, number]): PreprocessPlan {
  const [h, w] = size;
  return {
    dims: [1, 3, h, w],
    dtype: 'float32',
    ratio: letterboxGeometry(image.width, image.height, h, w).ratio,
    write: (out, offset) => { letterboxInto(image, size, out, offset); },
  };
}

export function planFor(family: ModelFamily, image: RgbImage, size: [number, number]): PreprocessPlan {
  return family.preprocess ? family.preprocess(image, size) : letterboxPlan(image, size);
}

export function planLength(plan: PreprocessPlan): number {
  return plan.dims.reduce((a, b) => a * b, 1);
}
