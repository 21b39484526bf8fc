/**
 * D-FINE's strong train ops, applied to a pre-resized sample that has boxes, in the
 * original's order, until the family's stop epoch:
 *   RandomPhotometricDistort(p 0.5) -> RandomZoomOut(fill 0, side 1..4, p 0.5)
 *   -> RandomIoUCrop (min scale 0.3, aspect 0.5..2, IoU options {0, .1, .3, .5, .7, .9, 1}, 40 trials) with p 0.8
 *   -> SanitizeBoundingBoxes(min_size 1).
 * Each op follows torchvision.transforms.v2's definition (its parameter draws, ranges and uint8
 * arithmetic); the random numbers come from the sample's own generator, not torch's, so a run is
 * reproducible here but not draw-for-draw the original's.
 *
 * Boxes are rows [cls, x1, y1, x2, y2] in pixels of the image they come with.
 */
import type { RgbImage } from './rgb-image.ts';
import { keepBoxRows, type Rand } from './augment.ts';

export interface Sample {
  img: RgbImage;
  boxes: Float32Array;
}

const clampU8 = (v: number): number => (v <= 0 ? 0 : v >= 255 ? 255 : Math.trunc(v));
const uniform = (rand: Rand, lo: number, hi: number): number => lo + (hi - lo) * rand();

/** torchvision's rgb_to_grayscale on uint8 (0.2989 r + 0.587 g + 0.114 b, truncated). */
function grey(d: Uint8Array, k: number): number {
  return Math.trunc(0.2989 * d[k]! + 0.587 * d[k + 1]! + 0.114 * d[k + 2]!);
}

/** `ratio * img + (1 - ratio) * other(k)` per value, clamped and truncated to uint8 (torchvision's _blend). */
function blend(img: RgbImage, ratio: number, other: (k: number) => number): void {
  const d = img.data;
  for (let k = 0; k < d.length; k += 3) {
    const o = (1 - ratio) * other(k);
    d[k] = clampU8(ratio * d[k]! + o);
    d[k + 1] = clampU8(ratio * d[k + 1]! + o);
    d[k + 2] = clampU8(ratio * d[k + 2]! + o);
  }
}

function adjustContrast(img: RgbImage, factor: number): void {
  const d = img.data;
  let sum = 0;
  for (let k = 0; k < d.length; k += 3) sum += grey(d, k);
  const mean = sum / (d.length / 3);
  blend(img, factor, () => mean);
}

/** torchvision's adjust_hue: RGB -> HSV in float, h shifted by `factor` turns (mod 1), back to uint8. */
function adjustHue(img: RgbImage, factor: number): void {
  const d = img.data;
  // float -> uint8 as torchvision's to_dtype(scale=True): x * (255 + 1 - 1e-3), truncated.
  const back = (v: number): number => clampU8(v * (256 - 1e-3));
  for (let k = 0; k < d.length; k += 3) {
    const r = d[k]! / 255, g = d[k + 1]! / 255, b = d[k + 2]! / 255;
    const max = Math.max(r, g, b), min = Math.min(r, g, b), c = max - min;
    let h = 0;
    if (c > 0) {
      if (max === r) h = ((g - b) / c) / 6;
      else if (max === g) h = ((b - r) / c + 2) / 6;
      else h = ((r - g) / c + 4) / 6;
    }
    h = (((h + factor) % 1) + 1) % 1;
    const s = max > 0 ? c / max : 0, v = max;
    const i = Math.floor(h * 6) % 6, f = h * 6 - Math.floor(h * 6);
    const p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
    const [rr, gg, bb] = [[v, t, p], [q, v, p], [p, v, t], [p, q, v], [t, p, v], [v, p, q]][i]!;
    d[k] = back(rr!); d[k + 1] = back(gg!); d[k + 2] = back(bb!);
  }
}

/**
 * RandomPhotometricDistort(p 0.5) with torchvision's default ranges: brightness 0.875..1.125,
 * contrast 0.5..1.5 (before or after saturation and hue, even odds), saturation 0.5..1.5, hue
 * -0.05..0.05, then a random channel permutation; each of the five drawn with p 0.5. In place.
 */
export function photometricDistort(img: RgbImage, rand: Rand, p = 0.5): void {
  const pick = (lo: number, hi: number): number | null => (rand() < p ? uniform(rand, lo, hi) : null);
  const brightness = pick(0.875, 1.125);
  const contrast = pick(0.5, 1.5);
  const saturation = pick(0.5, 1.5);
  const hue = pick(-0.05, 0.05);
  const contrastBefore = rand() < 0.5;
  let perm: number[] | null = null;
  if (rand() < p) {
    perm = [0, 1, 2];
    for (let i = 2; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [perm[i], perm[j]] = [perm[j]!, perm[i]!];
    }
  }
  if (brightness !== null) blend(img, brightness, () => 0);
  if (contrast !== null && contrastBefore) adjustContrast(img, contrast);
  if (saturation !== null) { const d = img.data; blend(img, saturation, (k) => grey(d, k)); }
  if (hue !== null) adjustHue(img, hue);
  if (contrast !== null && !contrastBefore) adjustContrast(img, contrast);
  if (perm) {
    const d = img.data;
    for (let k = 0; k < d.length; k += 3) {
      const px = [d[k]!, d[k + 1]!, d[k + 2]!];
      d[k] = px[perm[0]!]!; d[k + 1] = px[perm[1]!]!; d[k + 2] = px[perm[2]!]!;
    }
  }
}

/** RandomZoomOut(fill 0, side_range 1..4, p 0.5): the image at a random place on a canvas r times its size. */
export function zoomOut(s: Sample, rand: Rand, p = 0.5, maxSide = 4): Sample {
  if (!(rand() < p)) return s;
  const r = uniform(rand, 1, maxSide);
  const { width: w, height: h } = s.img;
  const cw = Math.trunc(w * r), ch = Math.trunc(h * r);
  const left = Math.trunc((cw - w) * rand()), top = Math.trunc((ch - h) * rand());
  const data = new Uint8Array(cw * ch * 3);
  for (let y = 0; y < h; y++) data.set(s.img.data.subarray(y * w * 3, (y + 1) * w * 3), ((top + y) * cw + left) * 3);
  const boxes = s.boxes.slice();
  for (let i = 0; i < boxes.length; i += 5) {
    boxes[i + 1]! += left; boxes[i + 3]! += left;
    boxes[i + 2]! += top; boxes[i + 4]! += top;
  }
  return { img: { data, width: cw, height: ch }, boxes };
}

const IOU_OPTIONS = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0];

function iouWithCrop(boxes: Float32Array, i: number, l: number, t: number, r: number, b: number): number {
  const [x1, y1, x2, y2] = [boxes[i + 1]!, boxes[i + 2]!, boxes[i + 3]!, boxes[i + 4]!];
  const iw = Math.max(0, Math.min(x2, r) - Math.max(x1, l)), ih = Math.max(0, Math.min(y2, b) - Math.max(y1, t));
  const inter = iw * ih;
  return inter / ((x2 - x1) * (y2 - y1) + (r - l) * (b - t) - inter);
}

/**
 * RandomIoUCrop (torchvision v2 defaults): draw a minimum IoU from the options (1: no crop), then up
 * to 40 crops of scale 0.3..1 per side and aspect 0.5..2; a crop is taken when some box centre lies
 * strictly inside it and the best IoU of those boxes with the crop reaches the minimum; otherwise
 * another minimum is drawn. Boxes whose centre is outside are dropped, the others clipped to the crop.
 */
export function iouCrop(s: Sample, rand: Rand, minScale = 0.3, maxScale = 1, minAspect = 0.5, maxAspect = 2, trials = 40): Sample {
  const { width: w, height: h } = s.img;
  const n = s.boxes.length / 5;
  if (n === 0) return s;
  // torchvision loops until it returns; the 1.0 option (1 in 7) always does, so this bound is never reached in practice.
  for (let round = 0; round < 10_000; round++) {
    const minIou = IOU_OPTIONS[Math.floor(rand() * IOU_OPTIONS.length)]!;
    if (minIou >= 1) return s;
    for (let k = 0; k < trials; k++) {
      const nw = Math.trunc(w * uniform(rand, minScale, maxScale)), nh = Math.trunc(h * uniform(rand, minScale, maxScale));
      const aspect = nw / nh;
      if (!(aspect >= minAspect && aspect <= maxAspect)) continue;
      const left = Math.trunc((w - nw) * rand()), top = Math.trunc((h - nh) * rand());
      const right = left + nw, bottom = top + nh;
      if (left === right || top === bottom) continue;
      const inside: number[] = [];
      let best = 0;
      for (let i = 0; i < n; i++) {
        const o = i * 5;
        const cx = (s.boxes[o + 1]! + s.boxes[o + 3]!) / 2, cy = (s.boxes[o + 2]! + s.boxes[o + 4]!) / 2;
        if (left < cx && cx < right && top < cy && cy < bottom) {
          inside.push(o);
          best = Math.max(best, iouWithCrop(s.boxes, o, left, top, right, bottom));
        }
      }
      if (inside.length === 0 || best < minIou) continue;
      const data = new Uint8Array(nw * nh * 3);
      for (let y = 0; y < nh; y++) data.set(s.img.data.subarray(((top + y) * w + left) * 3, ((top + y) * w + right) * 3), y * nw * 3);
      const boxes = new Float32Array(inside.length * 5);
      inside.forEach((o, j) => {
        const c = (v: number, lo: number, hi: number): number => Math.min(Math.max(v, lo), hi);
        boxes.set([s.boxes[o]!, c(s.boxes[o + 1]! - left, 0, nw), c(s.boxes[o + 2]! - top, 0, nh), c(s.boxes[o + 3]! - left, 0, nw), c(s.boxes[o + 4]! - top, 0, nh)], j * 5);
      });
      return { img: { data, width: nw, height: nh }, boxes };
    }
  }
  return s;
}

/** SanitizeBoundingBoxes(min_size 1): boxes with a side under 1 px go. */
export function sanitizeBoxes(boxes: Float32Array, minSize = 1): Float32Array {
  return keepBoxRows(boxes, (i) => boxes[i + 3]! - boxes[i + 1]! >= minSize && boxes[i + 4]! - boxes[i + 2]! >= minSize);
}

/** The strong ops in the original's order, on a sample with boxes (one without is returned as is). */
export function strongAugment(s: Sample, rand: Rand): Sample {
  if (s.boxes.length === 0) return s;
  const img = { ...s.img, data: s.img.data.slice() };
  photometricDistort(img, rand);
  let out = zoomOut({ img, boxes: s.boxes }, rand);
  if (rand() < 0.8) out = iouCrop(out, rand);
  return { img: out.img, boxes: sanitizeBoxes(out.boxes) };
}
