/**
 * HSV jitter with OpenCV's 8-bit arithmetic (RGB2HSV_FULL=false: H in 0..179): the gains as the
 * original draws them, and the in-place RGB -> HSV -> RGB round trip with OpenCV's vector/scalar
 * rounding split (the `hsv` step of a train recipe).
 */

import type { RgbImage } from './rgb-image.ts';
import { rint } from '../util/math.ts';

type Rand = () => number;

/** The original's maximum HSV gains (H, S, V in OpenCV units). */
export const HSV_GAINS: readonly [number, number, number] = [5, 30, 30];


const HSV_SHIFT = 12;
const HALF = 1 << (HSV_SHIFT - 1);

const SDIV = new Int32Array(256);
const HDIV = new Int32Array(256);
for (let i = 1; i < 256; i++) {
  SDIV[i] = rint((255 << HSV_SHIFT) / i);
  HDIV[i] = rint((180 << HSV_SHIFT) / (6 * i));
}
const F255 = Math.fround(1 / 255);
const HSCALE = Math.fround(6 / 180);

/** Random HSV gains as the original draws them: U(-1,1) * max gain, each zeroed with p = 0.5, truncated to int. */
export function drawHsvGains(rand: Rand, max: readonly [number, number, number] = HSV_GAINS): [number, number, number] {
  const g = max.map((m) => (rand() * 2 - 1) * m);
  const keep = [rand() < 0.5, rand() < 0.5, rand() < 0.5];
  return [0, 1, 2].map((k) => (keep[k] ? Math.trunc(g[k]!) : 0)) as [number, number, number];
}

/**
 * In-place HSV jitter: RGB -> HSV (OpenCV 8-bit), H = (H + gH) mod 180, S and V clipped to 0..255,
 * then back to RGB with OpenCV's float conversion and rounding. Zero gains still round-trip through
 * HSV (which moves some colours by a few levels), as the original does.
 */
export function augmentHsv(img: RgbImage, gains: readonly [number, number, number]): void {
  const [gh, gs, gv] = gains;
  const d = img.data;
  const rowBytes = img.width * 3;
  // OpenCV converts each row in vector blocks of 32 pixels (AVX2) and the rest with scalar code,
  // which rounds slightly differently; reproduce the split.
  const vecBytes = Math.floor(img.width / HSV_VECTOR_PIXELS) * HSV_VECTOR_PIXELS * 3;
  // Direct-mapped cache of converted colours: images repeat colours a lot, and the result of a
  // colour depends only on it, the gains and the code path (bit 24 of the key).
  CACHE_KEY.fill(-1);
  for (let row = 0; row < d.length; row += rowBytes) {
    for (let i = row, end = row + rowBytes, vecEnd = row + vecBytes; i < end; i += 3) {
      const r = d[i]!, g = d[i + 1]!, b = d[i + 2]!;
      const vector = i < vecEnd;
      const key = (r << 16) | (g << 8) | b | (vector ? 0 : 1 << 24);
      const slot = Math.imul(key, 0x9e3779b1) >>> (32 - CACHE_BITS);
      if (CACHE_KEY[slot] === key) {
        const c = CACHE_VAL[slot]!;
        d[i] = c >>> 16; d[i + 1] = (c >>> 8) & 255; d[i + 2] = c & 255;
        continue;
      }
      let v = r > g ? r : g; if (b > v) v = b;
      let vmin = r < g ? r : g; if (b < vmin) vmin = b;
      const diff = v - vmin;
      let s = (diff * SDIV[v]! + HALF) >> HSV_SHIFT;
      let h: number;
      if (v === r) h = g - b;
      else if (v === g) h = b - r + 2 * diff;
      else h = r - g + 4 * diff;
      h = (h * HDIV[diff]! + HALF) >> HSV_SHIFT;
      if (h < 0) h += 180;
      // jitter; numpy's % is non-negative for a positive divisor, JS's keeps the dividend's sign
      h = (((h + gh) % 180) + 180) % 180;
      s += gs; if (s < 0) s = 0; else if (s > 255) s = 255;
      let vv = v + gv; if (vv < 0) vv = 0; else if (vv > 255) vv = 255;
      hsvToRgbInto(h, s, vv, d, i, vector);
      CACHE_KEY[slot] = key;
      CACHE_VAL[slot] = (d[i]! << 16) | (d[i + 1]! << 8) | d[i + 2]!;
    }
  }
}

/** Pixels per vector block of OpenCV's 8-bit HSV2RGB (4 x 8 float lanes with AVX2). */
export const HSV_VECTOR_PIXELS = 32;

const CACHE_BITS = 14;
const CACHE_KEY = new Int32Array(1 << CACHE_BITS);
const CACHE_VAL = new Int32Array(1 << CACHE_BITS);

/** Round half to even and saturate (saturate_cast<uchar> of a float in the scalar path). */
function roundByte(v: number): number {
  let q = Math.floor(v);
  const d = v - q;
  if (d > 0.5 || (d === 0.5 && (q & 1) === 1)) q++;
  return q > 255 ? 255 : q < 0 ? 0 : q;
}

/** Truncate and saturate (the vector path's float -> int conversion). */
function truncByte(v: number): number {
  const q = Math.trunc(v);
  return q > 255 ? 255 : q < 0 ? 0 : q;
}

/**
 * OpenCV's HSV2RGB for 8-bit data (checked against cv2 4.6, x86-64, on every H/S/V triple and both
 * code paths). float32 arithmetic throughout; `fma` marks a fused multiply-add, reproduced exactly
 * by double arithmetic and one rounding since a float32 product is exact in a double.
 *   vector path: q = v*fma(-s, h, 1), t = v*fma(-s, 1-h, 1), results truncated
 *   scalar path: q = v*fma(-s, h, 1), t = v*(1 - s*(1-h)), results rounded half to even
 */
function hsvToRgbInto(h: number, s: number, v: number, d: Uint8Array, i: number, vector: boolean): void {
  const vf = Math.fround(v * F255);
  const sf = Math.fround(s * F255);
  const hf = Math.fround(h * HSCALE);
  const sector = Math.floor(hf);
  const f = Math.fround(hf - sector);
  // tab = [v, p, q, t]; (b, g, r) per sector: {1,3,0} {1,0,2} {3,0,1} {0,2,1} {0,1,3} {2,1,0}
  const pf = Math.fround(vf * Math.fround(1 - sf));
  let x: number; // q or t, whichever this sector uses
  if ((sector & 1) === 1) {
    x = Math.fround(vf * Math.fround(1 - sf * f));
  } else {
    const omf = Math.fround(1 - f);
    x = Math.fround(vf * (vector ? Math.fround(1 - sf * omf) : Math.fround(1 - Math.fround(sf * omf))));
  }
  let tv: number, tp: number, tx: number;
  if (vector) {
    tv = truncByte(Math.fround(vf * 255)); tp = truncByte(Math.fround(pf * 255)); tx = truncByte(Math.fround(x * 255));
  } else {
    tv = roundByte(Math.fround(vf * 255)); tp = roundByte(Math.fround(pf * 255)); tx = roundByte(Math.fround(x * 255));
  }
  switch (sector) {
    case 0: d[i] = tv; d[i + 1] = tx; d[i + 2] = tp; break;
    case 1: d[i] = tx; d[i + 1] = tv; d[i + 2] = tp; break;
    case 2: d[i] = tp; d[i + 1] = tv; d[i + 2] = tx; break;
    case 3: d[i] = tp; d[i + 1] = tx; d[i + 2] = tv; break;
    case 4: d[i] = tx; d[i + 1] = tp; d[i + 2] = tv; break;
    default: d[i] = tv; d[i + 1] = tp; d[i + 2] = tx; break;
  }
}

/** RGB -> OpenCV 8-bit HSV of one pixel (H 0..179), exposed for tests. */
export function rgbToHsv8(r: number, g: number, b: number): [number, number, number] {
  const v = Math.max(r, g, b);
  const diff = v - Math.min(r, g, b);
  const s = (diff * SDIV[v]! + HALF) >> HSV_SHIFT;
  let h = v === r ? g - b : v === g ? b - r + 2 * diff : r - g + 4 * diff;
  h = (h * HDIV[diff]! + HALF) >> HSV_SHIFT;
  if (h < 0) h += 180;
  return [h, s, v];
}

/** OpenCV 8-bit HSV -> RGB of one pixel (vector path by default), exposed for tests. */
export function hsv8ToRgb(h: number, s: number, v: number, vector = true): [number, number, number] {
  const out = new Uint8Array(3);
  hsvToRgbInto(h, s, v, out, 0, vector);
  return [out[0]!, out[1]!, out[2]!];
}
