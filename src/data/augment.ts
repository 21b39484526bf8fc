/**
 * Training augmentations on packed RGB (HWC, uint8) images with pixel boxes, and the per-sample train
 * pipeline the loader runs: the original's YOLO9 recipe (pre-resize by the load ratio, optional 4-image
 * mosaic with no affine, HSV jitter in OpenCV's 8-bit HSV space, horizontal flip, top-left letterbox,
 * box filtering, normalised `[cls, x1, y1, x2, y2]` targets padded to `maxLabels` rows). Families whose
 * recipe follows the mosaic with YOLOX's random affine (affine.ts) set `affine`; mixup (mixup.ts) runs
 * after the mosaic when `mixupProb` > 0. A random scale/translate is available as an option (off by
 * default, as in YOLO9).
 *
 * Boxes are `Float32Array`s of `n * 5` values `[cls, x1, y1, x2, y2]` in pixels.
 */

import type { RgbImage } from './rgb-image.ts';
import { letterboxGeometry, letterboxInto, resizeBilinear, PAD_VALUE } from './letterbox.ts';
import { affineSegments, randomAffine, type AffineHyp } from './affine.ts';
import { resizePilBilinear } from './pil-resize.ts';
import { augmentHsv, drawHsvGains, HSV_GAINS } from './hsv.ts';
import { rasterizeTarget } from './masks/fill.ts';

export { augmentHsv, drawHsvGains, hsv8ToRgb, HSV_VECTOR_PIXELS, rgbToHsv8 } from './hsv.ts';

export type Rand = () => number;

export { mulberry32 } from '../util/random.ts';

/** Mixes integers into one 32-bit seed (splitmix-style finaliser). */
export function mixSeed(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

export interface AugmentHyp {
  /** Probability of HSV jitter (default 1). */
  hsvProb: number;
  /** Maximum gains in OpenCV HSV units (H in 0..179, S/V in 0..255): default 5, 30, 30. */
  hsvGains: readonly [number, number, number];
  /** Probability of a horizontal flip (default 0.5). */
  flipProb: number;
  /** Probability of a mosaic item while mosaic is on (default 1). */
  mosaicProb: number;
  /** Random scale gain: factor in [1 - scale, 1 + scale]; 0 disables (default 0, as YOLO9). */
  scale: number;
  /** Random translation as a fraction of the image side; 0 disables (default 0, as YOLO9). */
  translate: number;
  /**
   * The random affine that maps the 2s x 2s mosaic onto the s x s input (YOLOX); null: the mosaic is
   * halved with no affine (default, as YOLO9).
   */
  affine: AffineHyp | null;
  /** Probability of mixup after a mosaic that has labels (default 0, as YOLO9). */
  mixupProb: number;
  /** Jitter range of the mixed-in image (default [0.5, 1.5]). */
  mixupScale: readonly [number, number];
  /** Probability of a horizontal flip before the crops (RF-DETR; default 0, no draw). */
  preFlipProb: number;
  /** RF-DETR's random resize + square crop (crop-resize.ts); null: off (default). */
  cropResize: CropResizeHyp | null;
  /**
   * The last step onto the s x s input: top-left letterbox (default, YOLO9/YOLOX) or a stretch that
   * ignores the aspect ratio (D-FINE's train Resize to 640x640, after the aspect-preserving pre-resize).
   */
  resize?: 'letterbox' | 'stretch';
  /**
   * The stretch is OpenCV's INTER_LINEAR (no antialias) and boxes with a side <= 1 px after it are
   * always dropped (RF-DETR's transform); default: the antialiased stretch, boxes kept when all would go.
   */
  stretchLinear?: boolean;
}

/** RF-DETR's resize of the shortest side to one of `scales`, then a random square crop (crop-resize.ts). */
export interface CropResizeHyp {
  prob: number;
  /** Shortest-side sizes, one drawn uniformly. */
  scales: readonly number[];
  /** The crop side is at most this (and the image's sides). */
  maxSize: number;
  /** The crop side is at least min(this, m). */
  minCrop: number;
}

export const DEFAULT_HYP: Readonly<AugmentHyp> = Object.freeze({
  hsvProb: 1, hsvGains: HSV_GAINS, flipProb: 0.5, mosaicProb: 1, scale: 0, translate: 0,
  affine: null, mixupProb: 0, mixupScale: [0.5, 1.5] as const, preFlipProb: 0, cropResize: null,
});

// ---------------------------------------------------------------------------------------------
// Geometry

/**
 * Instance outlines carried beside the boxes for segment training: `segs[k]` is the ring
 * `x1 y1 x2 y2 ...` of box row k, in the same pixels as the boxes, transformed with them.
 */
export type Segments = Float32Array[];

/** Every ring's x and y mapped through `fx` / `fy` (a new array per ring). */
export function mapSegments(segs: Segments, fx: (x: number) => number, fy: (y: number) => number): Segments {
  return segs.map((r) => r.map((v, i) => (i % 2 ? fy(v) : fx(v))));
}

/** In-place horizontal flip of the image and its boxes (x1' = W - x2, x2' = W - x1), and of the rings when given. */
export function flipHorizontal(img: RgbImage, boxes: Float32Array, segs?: Segments): void {
  const { data, width: w, height: h } = img;
  for (let y = 0; y < h; y++) {
    let a = y * w * 3, b = a + (w - 1) * 3;
    while (a < b) {
      for (let c = 0; c < 3; c++) { const t = data[a + c]!; data[a + c] = data[b + c]!; data[b + c] = t; }
      a += 3; b -= 3;
    }
  }
  for (let i = 0; i < boxes.length; i += 5) {
    const x1 = boxes[i + 1]!, x2 = boxes[i + 3]!;
    boxes[i + 1] = w - x2;
    boxes[i + 3] = w - x1;
  }
  if (segs) for (const r of segs) for (let i = 0; i < r.length; i += 2) r[i] = w - r[i]!;
}

/** Box rows (and their rings) whose width (times `scale`) and height (times `scaleY`) both exceed `minSide`. */
export function filterSamples(boxes: Float32Array, segs: Segments | undefined, minSide: number, scale = 1, scaleY = scale): { boxes: Float32Array; segs?: Segments } {
  const keep = (i: number): boolean => (boxes[i + 3]! - boxes[i + 1]!) * scale > minSide && (boxes[i + 4]! - boxes[i + 2]!) * scaleY > minSide;
  const kept = keepBoxRows(boxes, keep);
  if (!segs) return { boxes: kept };
  return { boxes: kept, segs: kept === boxes ? segs : segs.filter((_, k) => keep(k * 5)) };
}

/** Keeps boxes whose width (times `scale`) and height (times `scaleY`) both exceed `minSide`. */
export function filterBoxes(boxes: Float32Array, minSide: number, scale = 1, scaleY = scale): Float32Array {
  return keepBoxRows(boxes, (i) => (boxes[i + 3]! - boxes[i + 1]!) * scale > minSide && (boxes[i + 4]! - boxes[i + 2]!) * scaleY > minSide);
}

/** The [cls, x1, y1, x2, y2] rows (by offset) that `keepRow` accepts; the same array when all are kept. */
export function keepBoxRows(boxes: Float32Array, keepRow: (offset: number) => boolean): Float32Array {
  const keep: number[] = [];
  for (let i = 0; i < boxes.length; i += 5) if (keepRow(i)) keep.push(i);
  if (keep.length * 5 === boxes.length) return boxes;
  const out = new Float32Array(keep.length * 5);
  keep.forEach((i, k) => out.set(boxes.subarray(i, i + 5), k * 5));
  return out;
}

function filled(width: number, height: number, value = PAD_VALUE): RgbImage {
  return { data: new Uint8Array(width * height * 3).fill(value), width, height };
}

/** Copies `src[sx.., sy..]` (w x h) into `dst` at (dx, dy). */
function blit(src: RgbImage, sx: number, sy: number, dst: RgbImage, dx: number, dy: number, w: number, h: number): void {
  for (let y = 0; y < h; y++) {
    const so = ((sy + y) * src.width + sx) * 3;
    dst.data.set(src.data.subarray(so, so + w * 3), ((dy + y) * dst.width + dx) * 3);
  }
}

/**
 * The 4-image mosaic canvas (YOLOX placement): four pre-resized images placed around a random
 * centre of a 2s x 2s canvas of 114, boxes shifted and clipped to the canvas.
 */
export function mosaicCanvas(items: readonly { img: RgbImage; boxes: Float32Array; segs?: Segments }[], size: number, rand: Rand): { img: RgbImage; boxes: Float32Array; segs?: Segments } {
  const s = size, s2 = 2 * s;
  const yc = Math.trunc(s * (0.5 + rand())), xc = Math.trunc(s * (0.5 + rand()));
  const canvas = filled(s2, s2);
  const out: number[] = [];
  const withSegs = items.every((it) => it.segs !== undefined);
  const segsOut: Segments = [];
  items.forEach(({ img: img0, boxes, segs }, k) => {
    const scale = Math.min(1, s / img0.height, s / img0.width);
    const img = scale < 1 ? resizeBilinear(img0, Math.trunc(img0.width * scale), Math.trunc(img0.height * scale)) : img0;
    const { width: w, height: h } = img;
    let x1: number, y1: number, x2: number, y2: number, sx1: number, sy1: number;
    if (k === 0) { x1 = Math.max(xc - w, 0); y1 = Math.max(yc - h, 0); x2 = xc; y2 = yc; sx1 = w - (x2 - x1); sy1 = h - (y2 - y1); }
    else if (k === 1) { x1 = xc; y1 = Math.max(yc - h, 0); x2 = Math.min(xc + w, s2); y2 = yc; sx1 = 0; sy1 = h - (y2 - y1); }
    else if (k === 2) { x1 = Math.max(xc - w, 0); y1 = yc; x2 = xc; y2 = Math.min(s2, yc + h); sx1 = w - (x2 - x1); sy1 = 0; }
    else { x1 = xc; y1 = yc; x2 = Math.min(xc + w, s2); y2 = Math.min(s2, yc + h); sx1 = 0; sy1 = 0; }
    const cw = Math.min(x2 - x1, w - sx1), ch = Math.min(y2 - y1, h - sy1);
    if (cw > 0 && ch > 0) blit(img, sx1, sy1, canvas, x1, y1, cw, ch);
    const padw = x1 - sx1, padh = y1 - sy1;
    for (let i = 0; i < boxes.length; i += 5) {
      const c = (v: number, pad: number): number => Math.min(Math.max(v * scale + pad, 0), s2);
      out.push(boxes[i]!, c(boxes[i + 1]!, padw), c(boxes[i + 2]!, padh), c(boxes[i + 3]!, padw), c(boxes[i + 4]!, padh));
    }
    // The rings through the same placement, clipped to the canvas point by point.
    if (withSegs) for (const r of mapSegments(segs!, (x) => Math.min(Math.max(x * scale + padw, 0), s2), (y) => Math.min(Math.max(y * scale + padh, 0), s2))) segsOut.push(r);
  });
  return { img: canvas, boxes: Float32Array.from(out), ...(withSegs ? { segs: segsOut } : {}) };
}

/** The YOLO9 mosaic (no affine): the mosaic canvas halved to s x s, boxes with a side <= 2 px dropped. */
export function mosaic4(items: readonly { img: RgbImage; boxes: Float32Array; segs?: Segments }[], size: number, rand: Rand): { img: RgbImage; boxes: Float32Array; segs?: Segments } {
  const m = mosaicCanvas(items, size, rand);
  const halved = m.boxes.map((v, i) => (i % 5 === 0 ? v : v / 2));
  const segs = m.segs ? mapSegments(m.segs, (x) => x / 2, (y) => y / 2) : undefined;
  return { img: resizeBilinear(m.img, size, size), ...filterSamples(halved, segs, 2) };
}

/** The YOLOX mosaic: the mosaic canvas through the random affine onto s x s (boxes unfiltered, as the original). */
export function mosaicAffine(items: readonly { img: RgbImage; boxes: Float32Array; segs?: Segments }[], size: number, affine: AffineHyp, rand: Rand): { img: RgbImage; boxes: Float32Array; segs?: Segments } {
  return randomAffine(mosaicCanvas(items, size, rand), size, affine, rand);
}

/**
 * Random scale about the image centre and translation (an option; YOLO9 does not use it): bilinear
 * resampling onto a same-size canvas filled with 114; boxes transformed, clipped, and dropped when a
 * side is <= 2 px.
 */
export function scaleTranslate(img: RgbImage, boxes: Float32Array, k: number, tx: number, ty: number, segs?: Segments): { img: RgbImage; boxes: Float32Array; segs?: Segments } {
  const { width: w, height: h, data: src } = img;
  const out = filled(w, h);
  const cx = w / 2, cy = h / 2;
  for (let y = 0; y < h; y++) {
    const fy = (y + 0.5 - cy - ty) / k + cy - 0.5;
    if (fy < -0.5 || fy > h - 0.5) continue;
    const y0 = Math.floor(fy), wy = fy - y0;
    const ya = Math.min(Math.max(y0, 0), h - 1), yb = Math.min(Math.max(y0 + 1, 0), h - 1);
    for (let x = 0; x < w; x++) {
      const fx = (x + 0.5 - cx - tx) / k + cx - 0.5;
      if (fx < -0.5 || fx > w - 0.5) continue;
      const x0 = Math.floor(fx), wx = fx - x0;
      const xa = Math.min(Math.max(x0, 0), w - 1), xb = Math.min(Math.max(x0 + 1, 0), w - 1);
      const o = (y * w + x) * 3;
      for (let c = 0; c < 3; c++) {
        const top = src[(ya * w + xa) * 3 + c]! * (1 - wx) + src[(ya * w + xb) * 3 + c]! * wx;
        const bot = src[(yb * w + xa) * 3 + c]! * (1 - wx) + src[(yb * w + xb) * 3 + c]! * wx;
        out.data[o + c] = Math.round(top * (1 - wy) + bot * wy);
      }
    }
  }
  // Rings (segment training) go the random affine's way: the same map as the pixels, boxes from the rings.
  if (segs) {
    const warped = affineSegments(boxes, segs, [k, 0, (1 - k) * cx + tx, 0, k, (1 - k) * cy + ty], w, h);
    return { img: out, ...filterSamples(warped.boxes, warped.segs, 2) };
  }
  const nb = new Float32Array(boxes.length);
  for (let i = 0; i < boxes.length; i += 5) {
    nb[i] = boxes[i]!;
    nb[i + 1] = Math.min(Math.max((boxes[i + 1]! - cx) * k + cx + tx, 0), w);
    nb[i + 2] = Math.min(Math.max((boxes[i + 2]! - cy) * k + cy + ty, 0), h);
    nb[i + 3] = Math.min(Math.max((boxes[i + 3]! - cx) * k + cx + tx, 0), w);
    nb[i + 4] = Math.min(Math.max((boxes[i + 4]! - cy) * k + cy + ty, 0), h);
  }
  return { img: out, boxes: filterBoxes(nb, 2) };
}

// ---------------------------------------------------------------------------------------------
// The per-sample pipeline

/** An image resized by the load ratio `min(s/H0, s/W0)`, with its boxes in those pixels. */
export interface LoadedItem {
  img: RgbImage;
  boxes: Float32Array;
  /** Segment training: the ring of each box row, in the same pixels. */
  segs?: Segments;
  /** `[H0, W0]` of the file */
  origShape: [number, number];
}

/** Pre-resize as the original's loader: `(int(W0 r), int(H0 r))` with r = min(s/H0, s/W0), INTER_LINEAR (may upscale). */
export function preResize(img: RgbImage, size: number): RgbImage {
  const g = letterboxGeometry(img.width, img.height, size, size);
  return resizeBilinear(img, g.newWidth, g.newHeight);
}

/**
 * Final step of every train sample: HSV + flip (skipped for images without boxes, or when every box
 * would be filtered, as the original), top-left letterbox into `out` (float CHW /255), or with
 * `hyp.resize` 'stretch' an antialiased bilinear resize to size x size (INTER_LINEAR with `stretchLinear`); boxes scaled, filtered (side <= 1 px),
 * normalised by the canvas size, clipped to [0,1] and written into `targets` (`maxLabels` rows,
 * padding `[-1,0,0,0,0]`). Random draws are the same whatever the branch.
 */
export function trainTransform(
  img: RgbImage, boxes: Float32Array, size: number, hyp: AugmentHyp, rand: Rand,
  out: Float32Array, outOffset: number, targets: Float32Array, targetOffset: number, maxLabels: number,
  masks?: MaskTargets,
): number {
  const doHsv = rand() < hyp.hsvProb;
  const gains = drawHsvGains(rand, hyp.hsvGains);
  const doFlip = rand() < hyp.flipProb;
  const stretch = hyp.resize === 'stretch';
  const r = letterboxGeometry(img.width, img.height, size, size).ratio;
  const [sx, sy] = stretch ? [size / img.width, size / img.height] : [r, r];
  let final = boxes;
  let finalSegs = masks?.segs;
  if (boxes.length > 0) {
    const kept = filterSamples(boxes, masks?.segs, 1, sx, sy);
    if (hyp.stretchLinear) final = kept.boxes;
    if (kept.boxes.length > 0) {
      if (doHsv) augmentHsv(img, gains);
      if (doFlip) flipHorizontal(img, kept.boxes, kept.segs);
      final = kept.boxes;
      finalSegs = kept.segs;
    }
  }
  // The stretch is antialiased (torchvision's Resize(antialias=True), Pillow's kernel): after the strong ops' zoom-out it shrinks up to 4x.
  const resized = !stretch || (img.width === size && img.height === size) ? img : hyp.stretchLinear ? resizeBilinear(img, size, size) : resizePilBilinear(img, size, size);
  letterboxInto(resized, size, out, outOffset);
  const n = writeTargets(final, sx / size, targets, targetOffset, maxLabels, sy / size);
  if (masks) writeMaskTargets(finalSegs!.slice(0, n), sx, sy, size, masks);
  return n;
}

/** Where a sample's mask targets go: `maxLabels` slots of `(size / ratio)^2` at `offset` of `out`. */
export interface MaskTargets {
  /** The rings of the sample's box rows (pixels of the image before the final resize). */
  segs: Segments;
  out: Float32Array;
  offset: number;
  /** Mask downsample ratio (4: targets at the prototype resolution). */
  ratio: number;
}

/** Each ring scaled onto the input (clipped to it) and rasterised at 1/ratio into slot k (row k of the targets). */
export function writeMaskTargets(segs: Segments, sx: number, sy: number, size: number, masks: MaskTargets): void {
  const m = size / masks.ratio;
  segs.forEach((r, k) => {
    const scaled = r.map((v, i) => Math.min(Math.max(v * (i % 2 ? sy : sx), 0), size));
    rasterizeTarget([scaled], size, masks.ratio, masks.out, masks.offset + k * m * m);
  });
}

/** Writes boxes * scale (y * scaleY), clipped to [0,1], as `[cls, x1, y1, x2, y2]` rows; pads the rest. Returns rows written. */
export function writeTargets(boxes: Float32Array, scale: number, targets: Float32Array, offset: number, maxLabels: number, scaleY = scale): number {
  const n = Math.min(boxes.length / 5, maxLabels);
  const c = (v: number, k: number): number => Math.min(Math.max(v * k, 0), 1);
  for (let i = 0; i < n; i++) {
    const o = offset + i * 5, b = i * 5;
    targets[o] = boxes[b]!;
    targets[o + 1] = c(boxes[b + 1]!, scale);
    targets[o + 2] = c(boxes[b + 2]!, scaleY);
    targets[o + 3] = c(boxes[b + 3]!, scale);
    targets[o + 4] = c(boxes[b + 4]!, scaleY);
  }
  for (let i = n; i < maxLabels; i++) {
    const o = offset + i * 5;
    targets[o] = -1; targets[o + 1] = 0; targets[o + 2] = 0; targets[o + 3] = 0; targets[o + 4] = 0;
  }
  return n;
}

/** Random scale/translate step (when enabled in `hyp`) on a loaded item. Draws nothing when disabled. */
export function maybeScaleTranslate(item: { img: RgbImage; boxes: Float32Array; segs?: Segments }, hyp: AugmentHyp, rand: Rand): { img: RgbImage; boxes: Float32Array; segs?: Segments } {
  if (hyp.scale <= 0 && hyp.translate <= 0) return item;
  const k = 1 - hyp.scale + rand() * 2 * hyp.scale;
  const tx = (rand() * 2 - 1) * hyp.translate * item.img.width;
  const ty = (rand() * 2 - 1) * hyp.translate * item.img.height;
  return scaleTranslate(item.img, item.boxes, k, tx, ty, item.segs);
}
