/**
 * Pillow's `Image.resize(size, BILINEAR)` for 8-bit RGB, bit for bit (the YOLOX and DETR families
 * predict on inputs made this way; OpenCV's INTER_LINEAR has no antialiasing and shifts pixels by
 * several levels when downscaling). Pillow's integer arithmetic: separable passes, horizontal first
 * into a uint8 intermediate, triangle weights whose support grows with the downscale factor,
 * normalised and rounded to 22-bit fixed point, accumulated from a half-unit bias and clipped to 0..255.
 * Also Pillow's default BICUBIC for one 8-bit channel (the dataset checker's 9x8 hash thumbnail).
 */
import type { RgbImage } from './rgb-image.ts';

const PRECISION_BITS = 22;
const HALF = 1 << (PRECISION_BITS - 1);

interface Taps {
  /** first source index and number of taps per output index */
  start: Int32Array;
  count: Int32Array;
  /** fixed-point weights, `stride` slots per output index */
  weights: Int32Array;
  stride: number;
}

/** A Pillow resampling filter: its kernel and the kernel's support (widened by the downscale factor). */
interface Filter { support: number; kernel: (x: number) => number }

const BILINEAR: Filter = { support: 1, kernel: (x) => (x < 1 ? 1 - x : 0) };
/** Pillow's bicubic (a = -0.5), the default of `Image.resize`. */
const BICUBIC: Filter = {
  support: 2,
  kernel: (x) => (x < 1 ? (1.5 * x - 2.5) * x * x + 1 : x < 2 ? (((x - 5) * x + 8) * x - 4) * -0.5 : 0),
};

/** Pillow's precompute_coeffs + normalize_coeffs_8bpc for `filter`. */
function taps(inSize: number, outSize: number, filter: Filter = BILINEAR): Taps {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = filter.support * filterScale;
  const stride = Math.ceil(support) * 2 + 1;
  const t: Taps = { start: new Int32Array(outSize), count: new Int32Array(outSize), weights: new Int32Array(outSize * stride), stride };
  const k = new Float64Array(stride);
  const ss = 1 / filterScale; // Pillow multiplies by the reciprocal: dividing can differ in the last bit
  for (let o = 0; o < outSize; o++) {
    const center = (o + 0.5) * scale;
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const n = Math.min(Math.trunc(center + support + 0.5), inSize) - xmin;
    let sum = 0;
    for (let j = 0; j < n; j++) {
      k[j] = filter.kernel(Math.abs((j + xmin - center + 0.5) * ss));
      sum += k[j]!;
    }
    t.start[o] = xmin;
    t.count[o] = n;
    for (let j = 0; j < n; j++) {
      const w = sum !== 0 ? k[j]! / sum : k[j]!;
      t.weights[o * stride + j] = Math.trunc(w < 0 ? -0.5 + w * (1 << PRECISION_BITS) : 0.5 + w * (1 << PRECISION_BITS));
    }
  }
  return t;
}

function clip8(v: number): number {
  const s = v >> PRECISION_BITS;
  return s < 0 ? 0 : s > 255 ? 255 : s;
}

/** Horizontal pass over packed RGB rows (width w -> start.length). Typed arrays live in locals: V8 keeps those loops tight. */
function resizeRows(src: Uint8Array, w: number, h: number, t: Taps): Uint8Array {
  const { start, count, weights, stride } = t;
  const ow = start.length;
  const out = new Uint8Array(ow * h * 3);
  for (let y = 0; y < h; y++) {
    const row = y * w * 3;
    let d = y * ow * 3;
    for (let o = 0; o < ow; o++, d += 3) {
      let r = HALF, g = HALF, b = HALF;
      const base = o * stride;
      const n = count[o]!;
      let s = row + start[o]! * 3;
      for (let j = 0; j < n; j++, s += 3) {
        const k = weights[base + j]!;
        r = (r + Math.imul(src[s]!, k)) | 0; g = (g + Math.imul(src[s + 1]!, k)) | 0; b = (b + Math.imul(src[s + 2]!, k)) | 0;
      }
      out[d] = clip8(r); out[d + 1] = clip8(g); out[d + 2] = clip8(b);
    }
  }
  return out;
}

/** Vertical pass over packed RGB (height -> start.length, width w): whole rows accumulated in turn, so reads stay sequential. */
function resizeCols(src: Uint8Array, w: number, t: Taps): Uint8Array {
  const { start, count, weights, stride } = t;
  const oh = start.length;
  const rowBytes = w * 3;
  const out = new Uint8Array(rowBytes * oh);
  const acc = new Int32Array(rowBytes);
  for (let o = 0; o < oh; o++) {
    acc.fill(HALF);
    const base = o * stride;
    const n = count[o]!;
    for (let j = 0; j < n; j++) {
      const k = weights[base + j]!;
      const s = (start[o]! + j) * rowBytes;
      for (let x = 0; x < rowBytes; x++) acc[x] = (acc[x]! + Math.imul(src[s + x]!, k)) | 0;
    }
    const d = o * rowBytes;
    for (let x = 0; x < rowBytes; x++) out[d + x] = clip8(acc[x]!);
  }
  return out;
}

/** Pillow `Image.resize((w, h), BILINEAR)` on packed RGB; a pass whose size is unchanged is skipped, as Pillow does. */
export function resizePilBilinear(image: RgbImage, width: number, height: number): RgbImage {
  let data = image.data;
  if (width !== image.width) data = resizeRows(data, image.width, image.height, taps(image.width, width));
  if (height !== image.height) data = resizeCols(data, width, taps(image.height, height));
  return { data, width, height };
}


/**
 * Pillow `Image.resize((w, h))` (BICUBIC, its default) of an 8-bit single-channel image: the same
 * fixed-point separable passes as the RGB bilinear resize, horizontal first.
 */
export function resizePilGreyBicubic(grey: Uint8Array, width: number, height: number, outWidth: number, outHeight: number): Uint8Array {
  let data = grey;
  if (outWidth !== width) {
    const { start, count, weights, stride } = taps(width, outWidth, BICUBIC);
    const out = new Uint8Array(outWidth * height);
    for (let y = 0; y < height; y++) {
      const row = y * width;
      for (let o = 0; o < outWidth; o++) {
        let acc = HALF;
        const base = o * stride, s = row + start[o]!, n = count[o]!;
        for (let j = 0; j < n; j++) acc = (acc + Math.imul(data[s + j]!, weights[base + j]!)) | 0;
        out[y * outWidth + o] = clip8(acc);
      }
    }
    data = out;
  }
  if (outHeight !== height) {
    const { start, count, weights, stride } = taps(height, outHeight, BICUBIC);
    const out = new Uint8Array(outWidth * outHeight);
    for (let o = 0; o < outHeight; o++) {
      const base = o * stride, n = count[o]!;
      for (let x = 0; x < outWidth; x++) {
        let acc = HALF;
        for (let j = 0; j < n; j++) acc = (acc + Math.imul(data[(start[o]! + j) * outWidth + x]!, weights[base + j]!)) | 0;
        out[o * outWidth + x] = clip8(acc);
      }
    }
    data = out;
  }
  return data;
}
