/**
 * RF-DETR's per-sample geometry before the final stretch: a horizontal flip first, then (on a
 * sample with boxes) a resize of the shortest side to one of `scales` (INTER_LINEAR, aspect kept,
 * the long side int(long x s / short)) and a random square crop of integer side uniform in
 * [min(minCrop, m), m], m = min(maxSize, h, w), at a uniform integer position; boxes shifted,
 * clipped to the crop, and dropped when empty.
 */
import { flipHorizontal, keepBoxRows, type CropResizeHyp, type Rand } from './augment.ts';
import { resizeBilinear } from './letterbox.ts';
import type { Sample } from './strong-augment.ts';

/** The flip with probability `prob`, in place; draws nothing when `prob` is 0. */
export function maybeFlipFirst(s: Sample, prob: number, rand: Rand): Sample {
  if (prob > 0 && rand() < prob) flipHorizontal(s.img, s.boxes);
  return s;
}

/** Uniform integer in [lo, hi]. */
const randInt = (rand: Rand, lo: number, hi: number): number => lo + Math.min(hi - lo, Math.floor(rand() * (hi - lo + 1)));

/** The resize + square crop with probability `hyp.prob`, on a sample with boxes (others returned as they are, with no draw). */
export function randomResizeCrop(s: Sample, hyp: CropResizeHyp, rand: Rand): Sample {
  if (s.boxes.length === 0 || !(rand() < hyp.prob)) return s;
  const side = hyp.scales[Math.min(hyp.scales.length - 1, Math.floor(rand() * hyp.scales.length))]!;
  const { width: w0, height: h0 } = s.img;
  const short = Math.min(w0, h0);
  const [w, h] = w0 <= h0 ? [side, Math.trunc(h0 * side / short)] : [Math.trunc(w0 * side / short), side];
  const img = w === w0 && h === h0 ? s.img : resizeBilinear(s.img, w, h);
  const sx = w / w0, sy = h / h0;
  const m = Math.min(hyp.maxSize, h, w);
  const c = randInt(rand, Math.min(hyp.minCrop, m), m);
  const x0 = randInt(rand, 0, w - c), y0 = randInt(rand, 0, h - c);
  const data = new Uint8Array(c * c * 3);
  for (let y = 0; y < c; y++) data.set(img.data.subarray(((y0 + y) * w + x0) * 3, ((y0 + y) * w + x0 + c) * 3), y * c * 3);
  const b = s.boxes.slice();
  const clip = (v: number): number => Math.min(Math.max(v, 0), c);
  for (let i = 0; i < b.length; i += 5) {
    b[i + 1] = clip(b[i + 1]! * sx - x0); b[i + 2] = clip(b[i + 2]! * sy - y0);
    b[i + 3] = clip(b[i + 3]! * sx - x0); b[i + 4] = clip(b[i + 4]! * sy - y0);
  }
  return { img: { data, width: c, height: c }, boxes: keepBoxRows(b, (i) => b[i + 3]! > b[i + 1]! && b[i + 4]! > b[i + 2]!) };
}
