/**
 * Test-time augmentation views and their merge: every scale in TTA_SCALES (only 1.0 for
 * TTA_FIXED_SIZE families), each as is and mirrored left-right; detections of a mirrored view are
 * mirrored back (`[w - x2, y1, w - x1, y2]`), scaled views are divided by their scale and clamped,
 * and the union is merged by per-class NMS at `iou`, then filtered by `classes` and cut to `max_det`.
 */
import type { RgbImage } from '../data/rgb-image.ts';
import { resizeBilinear } from '../data/letterbox.ts';
import type { FamilyCapabilities } from '../models/registry.ts';
import type { Detections } from './postprocess.ts';

export interface View {
  image: RgbImage;
  scale: number;
  flipped: boolean;
}

export function flipHorizontal(img: RgbImage): RgbImage {
  const { width: w, height: h, data } = img;
  const out = new Uint8Array(data.length);
  for (let y = 0; y < h; y++) {
    const row = y * w * 3;
    for (let x = 0; x < w; x++) {
      const s = row + x * 3, d = row + (w - 1 - x) * 3;
      out[d] = data[s]!; out[d + 1] = data[s + 1]!; out[d + 2] = data[s + 2]!;
    }
  }
  return { data: out, width: w, height: h };
}

export function ttaScales(caps: FamilyCapabilities): number[] {
  return caps.TTA_FIXED_SIZE ? [1] : caps.TTA_SCALES;
}

export function ttaViews(image: RgbImage, scales: readonly number[]): View[] {
  const views: View[] = [];
  for (const s of scales) {
    const scaled = s === 1 ? image : resizeBilinear(image, Math.max(1, Math.floor(image.width * s)), Math.max(1, Math.floor(image.height * s)));
    views.push({ image: scaled, scale: s, flipped: false }, { image: flipHorizontal(scaled), scale: s, flipped: true });
  }
  return views;
}

/** Maps a view's detections back onto the original `width x height` image, in place. */
export function unmapView(det: Detections, view: View, width: number, height: number): Detections {
  const b = det.xyxy;
  const w = view.image.width;
  for (let k = 0; k < b.length; k += 4) {
    if (view.flipped) {
      const x1 = b[k]!;
      b[k] = w - b[k + 2]!;
      b[k + 2] = w - x1;
    }
    if (view.scale !== 1) {
      for (let j = 0; j < 4; j++) b[k + j] = b[k + j]! / view.scale;
      b[k] = Math.min(Math.max(b[k]!, 0), width); b[k + 2] = Math.min(Math.max(b[k + 2]!, 0), width);
      b[k + 1] = Math.min(Math.max(b[k + 1]!, 0), height); b[k + 3] = Math.min(Math.max(b[k + 3]!, 0), height);
    }
  }
  return det;
}
