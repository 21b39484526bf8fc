/**
 * Per-image network input plans from the family's input spec (letterbox or resize-stretch, channel
 * order, scale, mean/std), or the family's own preprocessing when it brings one. The trainer turns
 * its RGB 0..1 batches into the same layout with `toNetworkLayout`.
 */
import type { RgbImage } from '../data/rgb-image.ts';
import { letterboxGeometry, letterboxInto, PAD_VALUE, resizeBilinear } from '../data/letterbox.ts';
import { resizePilBilinear } from '../data/pil-resize.ts';
import { inputSpec, LETTERBOX_RGB_UNIT, type ModelFamily, type PreprocessPlan, type PreprocessSpec } from '../models/registry.ts';

/** Whether values must be rewritten after the RGB 0..1 letterbox (YOLOv9's layout needs nothing). */
function needsTransform(spec: PreprocessSpec): boolean {
  return spec.channels !== 'rgb' || spec.scale !== LETTERBOX_RGB_UNIT.scale || spec.mean !== undefined || spec.std !== undefined;
}

/**
 * Rewrites one `[3, plane]` RGB 0..1 slot (values exactly u8/255 in float32) into the spec's layout.
 * The u8 value is recovered exactly (round(v * 255)) so 0..255 inputs hold whole numbers.
 */
export function transformSlot(out: Float32Array, offset: number, plane: number, spec: PreprocessSpec): void {
  if (!needsTransform(spec)) return;
  const order = spec.channels === 'bgr' ? [2, 1, 0] : [0, 1, 2];
  const src = out.slice(offset, offset + 3 * plane);
  for (let c = 0; c < 3; c++) {
    const from = order[c]! * plane;
    const to = offset + c * plane;
    const m = spec.mean?.[c] ?? 0;
    const s = spec.std?.[c] ?? 1;
    // Per u8 level, each step in float32 (numpy: x.astype(float32) / 255, then (x - mean) / std).
    const lut = Float32Array.from({ length: 256 }, (_, u) => {
      const x = Math.fround(spec.scale === 1 / 255 ? u / 255 : u * spec.scale);
      return Math.fround(Math.fround(x - Math.fround(m)) / Math.fround(s));
    });
    for (let k = 0; k < plane; k++) out[to + k] = lut[Math.round(src[from + k]! * 255)]!;
  }
}

/** Converts a `[B, 3, H, W]` RGB 0..1 batch (the data loader's) in place to the family's input layout. */
export function toNetworkLayout(data: Float32Array, dims: readonly number[], spec: PreprocessSpec): void {
  const [b, , h, w] = dims as [number, number, number, number];
  const plane = h * w;
  for (let i = 0; i < b; i++) transformSlot(data, i * 3 * plane, plane, spec);
}

function fillPad(out: Float32Array, offset: number, [inH, inW]: [number, number], w: number, h: number, value: number): void {
  const plane = inH * inW;
  for (let c = 0; c < 3; c++) {
    const p = offset + c * plane;
    if (w < inW) for (let j = 0; j < h; j++) out.fill(value, p + j * inW + w, p + (j + 1) * inW);
    if (h < inH) out.fill(value, p + h * inW, p + plane);
  }
}

/** Letterbox onto the `[h, w]` canvas (top-left, padded right/bottom): every image gets the same shape. */
export function letterboxPlan(image: RgbImage, size: [number, number], spec: PreprocessSpec = LETTERBOX_RGB_UNIT): PreprocessPlan {
  const [h, w] = size;
  return {
    dims: [1, 3, h, w],
    dtype: 'float32',
    ratio: letterboxGeometry(image.width, image.height, h, w).ratio,
    write: (out, offset) => {
      const info = letterboxInto(image, size, out, offset);
      if (spec.pad !== PAD_VALUE) fillPad(out, offset, size, info.newWidth, info.newHeight, Math.fround(spec.pad / 255));
      transformSlot(out, offset, h * w, spec);
    },
  };
}

/** Resize to exactly `[h, w]` ignoring the aspect ratio (OpenCV INTER_LINEAR or Pillow BILINEAR arithmetic); x and y ratios differ. */
export function stretchPlan(image: RgbImage, size: [number, number], spec: PreprocessSpec): PreprocessPlan {
  const [h, w] = size;
  return {
    dims: [1, 3, h, w],
    dtype: 'float32',
    ratio: w / image.width,
    ratioY: h / image.height,
    write: (out, offset) => {
      letterboxInto(spec.filter === 'pil' ? resizePilBilinear(image, w, h) : resizeBilinear(image, w, h), size, out, offset);
      transformSlot(out, offset, h * w, spec);
    },
  };
}

export function planFor(family: ModelFamily, image: RgbImage, size: [number, number]): PreprocessPlan {
  if (family.preprocess) return family.preprocess(image, size);
  const spec = inputSpec(family);
  return spec.resize === 'stretch' ? stretchPlan(image, size, spec) : letterboxPlan(image, size, spec);
}

/**
 * The validator's input plan: the family's `valInput` when it has one (with `preResize`, the image
 * first fitted into the input by an aspect-preserving INTER_LINEAR resize to (int(W0 r), int(H0 r)),
 * as the original's validation dataset does), else the predict plan. Boxes still map back to the
 * original image.
 */
export function validationPlanFor(family: ModelFamily, image: RgbImage, size: [number, number]): PreprocessPlan {
  const spec = family.valInput;
  if (!spec) return planFor(family, image, size);
  if (!spec.preResize) return spec.resize === 'stretch' ? stretchPlan(image, size, spec) : letterboxPlan(image, size, spec);
  if (spec.resize !== 'stretch') throw new Error(`${family.name}: valInput.preResize is implemented for resize 'stretch' only`);
  const g = letterboxGeometry(image.width, image.height, size[0], size[1]);
  // The stretch's ratios are relative to the image it resized; boxes go back to the original.
  return { ...stretchPlan(resizeBilinear(image, g.newWidth, g.newHeight), size, spec), ratio: size[1] / image.width, ratioY: size[0] / image.height };
}

export function planLength(plan: PreprocessPlan): number {
  return plan.dims.reduce((a, b) => a * b, 1);
}
