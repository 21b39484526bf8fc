/**
 * Top-left letterbox: resize keeping the aspect ratio (up or down), pad right/bottom with 114, and
 * write float32 CHW /255 straight into a caller-owned tensor so batches stack without copies.
 *
 * The resize reproduces OpenCV's uint8 INTER_LINEAR arithmetic (the original preprocesses with it):
 * half-pixel centres computed in float32, 11-bit fixed-point weights, edge clamp, no antialiasing,
 * and the vectorised vertical pass's rounding. Weights and offsets are tabulated once per call.
 */

import type { RgbImage } from './rgb-image.ts';
import { rint } from '../util/math.ts';

/** Network input size: a square side or an explicit `[height, width]`. */
export type InputSize = number | readonly [number, number];

export interface LetterboxInfo {
  /** Scale from original to canvas pixels; boxes go back by dividing by it. */
  ratio: number;
  newWidth: number;
  newHeight: number;
}

export const PAD_VALUE = 114;

const COEF_BITS = 11;
const COEF_SCALE = 1 << COEF_BITS; // 2048

/** `[height, width]` of the network input. */
export function inputHW(size: InputSize): [number, number] {
  return typeof size === 'number' ? [size, size] : [size[0], size[1]];
}

/** Ratio and resized size for an original `w0 x h0` image on an `inH x inW` canvas. */
export function letterboxGeometry(w0: number, h0: number, inH: number, inW: number): LetterboxInfo {
  const ratio = Math.min(inH / h0, inW / w0);
  return {
    ratio,
    newWidth: Math.max(Math.trunc(w0 * ratio), 1),
    newHeight: Math.max(Math.trunc(h0 * ratio), 1),
  };
}


interface AxisTable {
  /** first / second source index per destination index, already clamped to the image */
  i0: Int32Array;
  i1: Int32Array;
  /** fixed-point weights (sum 2048, +-1 from rounding each) */
  w0: Int32Array;
  w1: Int32Array;
}

/**
 * Source taps and weights along one axis. OpenCV clamps the fraction to 0 at the horizontal edges but
 * keeps it vertically (both taps then hit the same clamped row); `clampFraction` selects the variant
 * so the rounding of the vertical pass matches too.
 */
function axisTable(src: number, dst: number, clampFraction: boolean): AxisTable {
  const scale = 1 / (dst / src);
  const t: AxisTable = {
    i0: new Int32Array(dst), i1: new Int32Array(dst), w0: new Int32Array(dst), w1: new Int32Array(dst),
  };
  for (let d = 0; d < dst; d++) {
    let f = Math.fround((d + 0.5) * scale - 0.5);
    let s = Math.floor(f);
    f = Math.fround(f - s);
    if (clampFraction) {
      if (s < 0) { f = 0; s = 0; }
      if (s >= src - 1) { f = 0; s = src - 1; }
    }
    t.i0[d] = Math.min(Math.max(s, 0), src - 1);
    t.i1[d] = Math.min(Math.max(s + 1, 0), src - 1);
    t.w0[d] = rint(Math.fround(1 - f) * COEF_SCALE);
    t.w1[d] = rint(f * COEF_SCALE);
  }
  return t;
}

/**
 * Horizontal taps as byte offsets within a source row, and both weights packed in one int
 * (w0 | w1 << 16; each <= 2048): one load fewer per pixel in the hot loop.
 */
interface RowTaps {
  o0: Int32Array;
  o1: Int32Array;
  w: Int32Array;
}

function rowTaps(sw: number, dw: number): RowTaps {
  const t = axisTable(sw, dw, true);
  return { o0: t.i0.map((i) => i * 3), o1: t.i1.map((i) => i * 3), w: t.w0.map((w0, i) => w0 | (t.w1[i]! << 16)) };
}

/**
 * One output sample from source bytes a0, a1 (upper row) and c0, c1 (lower row), with OpenCV's
 * rounding: each row's horizontal sum (weights total 2048, exact) is shifted right by 4, times the
 * vertical weight keeps the high 16 bits, and the two terms are summed and rounded by 2 more bits.
 * The weights sum to 2048 +- 1, which keeps the result within 0..255 without a clamp.
 *
 * Computing both horizontal sums here, instead of caching horizontally resized rows, costs extra
 * multiplies when upscaling but drops the intermediate rows' stores and reloads: typed-array accesses
 * are what these loops pay for in V8 (more so once any ArrayBuffer in the process was transferred,
 * which disables V8's bounds-check shortcuts for the whole isolate). 2.5x faster on 1280x720 -> 640.
 */
function lerp(src: Uint8Array, a0: number, a1: number, c0: number, c1: number, w0: number, w1: number, b0: number, b1: number): number {
  const top = (src[a0]! * w0 + src[a1]! * w1) >> 4;
  const bottom = (src[c0]! * w0 + src[c1]! * w1) >> 4;
  return (((top * b0) >> 16) + ((bottom * b1) >> 16) + 2) >> 2;
}

/** float32(v / 255) equals float32(v * INV255) for every byte v (checked exhaustively). */
const INV255 = 1 / 255;

/**
 * One destination row into the R, G and B planes at offsets r, g, b, as float32 v/255. `A` and `B`
 * are the byte offsets of the two source rows. Top-level with every input a parameter: V8 keeps
 * such loops tight, unlike a closure's.
 */
function resizeRowPlanes(
  out: Float32Array, r: number, g: number, b: number, w: number,
  src: Uint8Array, A: number, B: number, x: RowTaps, b0: number, b1: number,
): void {
  const { o0, o1, w: xw } = x;
  for (let i = 0; i < w; i++) {
    const p = o0[i]!, q = o1[i]!, ww = xw[i]!, w0 = ww & 0xffff, w1 = ww >>> 16;
    out[r + i] = lerp(src, A + p, A + q, B + p, B + q, w0, w1, b0, b1) * INV255;
    out[g + i] = lerp(src, A + p + 1, A + q + 1, B + p + 1, B + q + 1, w0, w1, b0, b1) * INV255;
    out[b + i] = lerp(src, A + p + 2, A + q + 2, B + p + 2, B + q + 2, w0, w1, b0, b1) * INV255;
  }
}

/** Same as resizeRowPlanes, into packed uint8 RGB at offset o. */
function resizeRowBytes(out: Uint8Array, o: number, w: number, src: Uint8Array, A: number, B: number, x: RowTaps, b0: number, b1: number): void {
  const { o0, o1, w: xw } = x;
  for (let i = 0; i < w; i++, o += 3) {
    const p = o0[i]!, q = o1[i]!, ww = xw[i]!, w0 = ww & 0xffff, w1 = ww >>> 16;
    out[o] = lerp(src, A + p, A + q, B + p, B + q, w0, w1, b0, b1);
    out[o + 1] = lerp(src, A + p + 1, A + q + 1, B + p + 1, B + q + 1, w0, w1, b0, b1);
    out[o + 2] = lerp(src, A + p + 2, A + q + 2, B + p + 2, B + q + 2, w0, w1, b0, b1);
  }
}

/** Unresized pixels into the planes (OpenCV copies when the size is unchanged). */
function copyRowPlanes(out: Float32Array, r: number, g: number, b: number, w: number, src: Uint8Array, s: number): void {
  for (let i = 0; i < w; i++, s += 3) {
    out[r + i] = src[s]! * INV255;
    out[g + i] = src[s + 1]! * INV255;
    out[b + i] = src[s + 2]! * INV255;
  }
}

/**
 * Exact 2x downscale: every tap sits half-way between two pixels (weights 1024/1024), and OpenCV's
 * fixed-point arithmetic then reduces to the rounded mean of each 2x2 block, ((a+b+c+d+2) >> 2).
 * Same bytes as resizeRowPlanes, without the tap tables and multiplies (a common case: 1280x720 at 640).
 */
function halveRowPlanes(out: Float32Array, r: number, g: number, b: number, w: number, src: Uint8Array, A: number, B: number): void {
  for (let i = 0, p = 0; i < w; i++, p += 6) {
    out[r + i] = ((src[A + p]! + src[A + p + 3]! + src[B + p]! + src[B + p + 3]! + 2) >> 2) * INV255;
    out[g + i] = ((src[A + p + 1]! + src[A + p + 4]! + src[B + p + 1]! + src[B + p + 4]! + 2) >> 2) * INV255;
    out[b + i] = ((src[A + p + 2]! + src[A + p + 5]! + src[B + p + 2]! + src[B + p + 5]! + 2) >> 2) * INV255;
  }
}

/** HWC uint8 bilinear resize (OpenCV INTER_LINEAR arithmetic). */
export function resizeBilinear(img: RgbImage, dw: number, dh: number): RgbImage {
  const out = new Uint8Array(dw * dh * 3);
  if (dw === img.width && dh === img.height) {
    out.set(img.data.subarray(0, out.length));
    return { data: out, width: dw, height: dh };
  }
  const x = rowTaps(img.width, dw);
  const y = axisTable(img.height, dh, false);
  const rowBytes = img.width * 3;
  for (let j = 0; j < dh; j++) {
    resizeRowBytes(out, j * dw * 3, dw, img.data, y.i0[j]! * rowBytes, y.i1[j]! * rowBytes, x, y.w0[j]!, y.w1[j]!);
  }
  return { data: out, width: dw, height: dh };
}

/**
 * Letterboxes `img` onto an `inputSize` canvas and writes it as float32 CHW /255 into
 * `out[offset .. offset + 3*H*W)`. Returns the ratio and the resized size.
 *
 * Resize, channel split and scaling happen in one pass over the destination rows, with no
 * intermediate image.
 */
export function letterboxInto(img: RgbImage, inputSize: InputSize, out: Float32Array, offset = 0): LetterboxInfo {
  const [inH, inW] = inputHW(inputSize);
  const plane = inH * inW;
  if (offset < 0 || out.length < offset + 3 * plane) {
    throw new RangeError(`letterbox output too small: need ${offset + 3 * plane} floats, have ${out.length}`);
  }
  const info = letterboxGeometry(img.width, img.height, inH, inW);
  const { newWidth: w, newHeight: h } = info;
  const g = offset + plane, b = offset + 2 * plane;
  const rowBytes = img.width * 3;
  if (w === img.width && h === img.height) {
    for (let j = 0; j < h; j++) copyRowPlanes(out, offset + j * inW, g + j * inW, b + j * inW, w, img.data, j * rowBytes);
  } else if (img.width === 2 * w && img.height === 2 * h) {
    for (let j = 0; j < h; j++) halveRowPlanes(out, offset + j * inW, g + j * inW, b + j * inW, w, img.data, 2 * j * rowBytes, (2 * j + 1) * rowBytes);
  } else {
    const x = rowTaps(img.width, w);
    const y = axisTable(img.height, h, false);
    for (let j = 0; j < h; j++) {
      resizeRowPlanes(out, offset + j * inW, g + j * inW, b + j * inW, w,
        img.data, y.i0[j]! * rowBytes, y.i1[j]! * rowBytes, x, y.w0[j]!, y.w1[j]!);
    }
  }
  const pad = Math.fround(PAD_VALUE / 255);
  for (const p of [offset, g, b]) {
    if (w < inW) for (let j = 0; j < h; j++) out.fill(pad, p + j * inW + w, p + (j + 1) * inW);
    if (h < inH) out.fill(pad, p + h * inW, p + plane);
  }
  return info;
}

/** Allocates a `[1, 3, H, W]` float32 buffer and letterboxes into it. */
export function letterbox(img: RgbImage, inputSize: InputSize): LetterboxInfo & { tensor: Float32Array; dims: [number, number, number, number] } {
  const [inH, inW] = inputHW(inputSize);
  const tensor = new Float32Array(3 * inH * inW);
  const info = letterboxInto(img, inputSize, tensor, 0);
  return { ...info, tensor, dims: [1, 3, inH, inW] };
}
