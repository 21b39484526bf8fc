/**
 * Masks drawn under the boxes of a saved prediction, as the original draws them: one translucent
 * layer per mask (its class colour at alpha int(0.45 x 255) = 114) composited in result order onto a
 * transparent overlay, then the overlay onto the image, with Pillow's integer `alpha_composite`
 * arithmetic. Plain typed-array code (no image library), so it runs anywhere the masks do.
 */
import type { RgbImage } from '../data/rgb-image.ts';
import type { Masks } from './masks.ts';

/** Pillow's division by 255 with rounding folded in: ((a >> 8) + a) >> 8. */
const div255 = (a: number): number => (((a >>> 8) + a) >>> 8);
const PRECISION_BITS = 7;

/** Pillow's `alpha_composite` of one pixel: `src` over `dst`, both RGBA 0..255; writes into `out` at `o`. */
export function compositePixel(dr: number, dg: number, db: number, da: number, sr: number, sg: number, sb: number, sa: number, out: Uint8Array, o: number): void {
  if (sa === 0) { out[o] = dr; out[o + 1] = dg; out[o + 2] = db; out[o + 3] = da; return; }
  const blend = da * (255 - sa);
  const outa255 = sa * 255 + blend;
  const coef1 = Math.trunc((sa * 255 * 255 * (1 << PRECISION_BITS)) / outa255);
  const coef2 = 255 * (1 << PRECISION_BITS) - coef1;
  const round = 0x80 << PRECISION_BITS;
  out[o] = div255(sr * coef1 + dr * coef2 + round) >>> PRECISION_BITS;
  out[o + 1] = div255(sg * coef1 + dg * coef2 + round) >>> PRECISION_BITS;
  out[o + 2] = div255(sb * coef1 + db * coef2 + round) >>> PRECISION_BITS;
  out[o + 3] = div255(outa255 + 0x80);
}

/**
 * A class's mask colour: hue steps by the golden angle (137.508 degrees) per class, saturation
 * 0.7-0.9 and value 0.8/0.95 alternating, HSV to RGB as Python's colorsys, channels truncated.
 */
export function maskColour(cls: number): [number, number, number] {
  const h = ((cls * 137.508) % 360) / 360;
  const s = 0.7 + (cls % 3) * 0.1;
  const v = 0.8 + (cls % 2) * 0.15;
  const i = Math.trunc(h * 6);
  const f = h * 6 - i;
  const p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  const rgb: [number, number, number][] = [[v, t, p], [q, v, p], [p, v, t], [p, q, v], [t, p, v], [v, p, q]];
  const [r, g, b] = rgb[i % 6]!;
  return [Math.trunc(r * 255), Math.trunc(g * 255), Math.trunc(b * 255)];
}

/** The image with `masks` (classes `cls`, one per mask) composited over it; the input is not changed. */
export function drawMasks(image: RgbImage, masks: Masks, cls: ArrayLike<number>, alpha = 0.45): RgbImage {
  const { width, height } = image;
  const a = Math.trunc(alpha * 255);
  const overlay = new Uint8Array(width * height * 4);
  masks.runs.forEach((runs, m) => {
    const [r, g, b] = maskColour(Math.trunc(cls[m]!));
    let p = 0;
    for (let k = 0; k < runs.length; k++) {
      const len = runs[k]!;
      if (k & 1) {
        for (let i = p; i < p + len; i++) {
          const o = 4 * i;
          compositePixel(overlay[o]!, overlay[o + 1]!, overlay[o + 2]!, overlay[o + 3]!, r, g, b, a, overlay, o);
        }
      }
      p += len;
    }
  });
  const out = new Uint8Array(image.data);
  const px = new Uint8Array(4);
  for (let i = 0; i < width * height; i++) {
    const sa = overlay[4 * i + 3]!;
    if (sa === 0) continue;
    compositePixel(out[3 * i]!, out[3 * i + 1]!, out[3 * i + 2]!, 255, overlay[4 * i]!, overlay[4 * i + 1]!, overlay[4 * i + 2]!, sa, px, 0);
    out[3 * i] = px[0]!; out[3 * i + 1] = px[1]!; out[3 * i + 2] = px[2]!;
  }
  return { width, height, data: out };
}
