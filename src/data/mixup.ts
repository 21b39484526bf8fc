/**
 * Mixup as the original's mosaic pipeline does it, after the mosaic: another
 * labelled image is letterboxed top-left onto a 114 canvas of the input size, rescaled by a jitter
 * factor U(mixup_scale), flipped horizontally with p 0.5, placed on a zero canvas at least the input
 * size and cropped back to it at a random offset; the two images are blended 0.5 a + 0.5 b
 * (truncated to uint8) and the other image's boxes, scaled, flipped, shifted and clipped the same
 * way, are added to the labels.
 */
import type { RgbImage } from './rgb-image.ts';
import { flipHorizontal } from './augment.ts';
import { PAD_VALUE, resizeBilinear } from './letterbox.ts';

type Rand = () => number;

/** The mixup draws that come before the other image is picked: the jitter factor, then the flip. */
export function drawMixup(rand: Rand, scale: readonly [number, number]): { jitter: number; flip: boolean } {
  const jitter = scale[0] + (scale[1] - scale[0]) * rand();
  return { jitter, flip: rand() > 0.5 };
}

/** A random integer in [0, n) (Python's randint(0, n - 1)). */
const randInt = (rand: Rand, n: number): number => Math.min(n - 1, Math.floor(rand() * n));

/**
 * `base` (size x size, pixel boxes) mixed with `other` (any size, pixel boxes) as drawn by
 * `drawMixup`; the crop offset is drawn here.
 */
export function mixup(
  base: { img: RgbImage; boxes: Float32Array }, other: { img: RgbImage; boxes: Float32Array }, size: number,
  draw: { jitter: number; flip: boolean }, rand: Rand,
): { img: RgbImage; boxes: Float32Array } {
  const { jitter, flip } = draw;
  // letterbox top-left onto size x size
  const r0 = Math.min(size / other.img.height, size / other.img.width);
  const lw = Math.trunc(other.img.width * r0), lh = Math.trunc(other.img.height * r0);
  const fitted = resizeBilinear(other.img, lw, lh);
  const canvas = new Uint8Array(size * size * 3).fill(PAD_VALUE);
  for (let y = 0; y < lh; y++) canvas.set(fitted.data.subarray(y * lw * 3, (y + 1) * lw * 3), y * size * 3);
  // jitter: the whole canvas resized, then flipped with its boxes
  const ow = Math.trunc(size * jitter), oh = Math.trunc(size * jitter);
  const jittered = resizeBilinear({ data: canvas, width: size, height: size }, ow, oh);
  const scale = r0 * jitter;
  const boxes = new Float32Array(other.boxes.length);
  for (let i = 0; i < boxes.length; i += 5) {
    boxes[i] = other.boxes[i]!;
    for (const k of [1, 3]) boxes[i + k] = Math.min(Math.max(other.boxes[i + k]! * scale, 0), ow);
    for (const k of [2, 4]) boxes[i + k] = Math.min(Math.max(other.boxes[i + k]! * scale, 0), oh);
  }
  if (flip) flipHorizontal(jittered, boxes);
  // onto a zero canvas of at least size x size, cropped at a random offset
  const ph = Math.max(oh, size), pw = Math.max(ow, size);
  const yOff = ph > size ? randInt(rand, ph - size) : 0;
  const xOff = pw > size ? randInt(rand, pw - size) : 0;
  const out = new Uint8Array(size * size * 3);
  const a = base.img.data;
  for (let y = 0; y < size; y++) {
    const sy = y + yOff;
    for (let x = 0; x < size; x++) {
      const sx = x + xOff;
      const o = (y * size + x) * 3;
      const inside = sy < oh && sx < ow;
      const so = (sy * ow + sx) * 3;
      for (let c = 0; c < 3; c++) out[o + c] = Math.trunc(0.5 * a[o + c]! + 0.5 * (inside ? jittered.data[so + c]! : 0));
    }
  }
  const moved = new Float32Array(boxes.length);
  for (let i = 0; i < boxes.length; i += 5) {
    moved[i] = boxes[i]!;
    for (const k of [1, 3]) moved[i + k] = Math.min(Math.max(boxes[i + k]! - xOff, 0), size);
    for (const k of [2, 4]) moved[i + k] = Math.min(Math.max(boxes[i + k]! - yOff, 0), size);
  }
  const all = new Float32Array(base.boxes.length + moved.length);
  all.set(base.boxes);
  all.set(moved, base.boxes.length);
  return { img: { data: out, width: size, height: size }, boxes: all };
}
