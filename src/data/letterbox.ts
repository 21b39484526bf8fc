/**
 * Top-left letterbox: resize keeping the aspect ratio (up or down), pad right/bottom with 114, and
 * write float32 CHW /255 straight into a caller-owned tensor so batches stack without copies.
 *
 * The resize reproduces OpenCV's uint8 INTER_LINEAR arithmetic (the original preprocesses with it):
 * half-pixel centres computed in float32, 11-bit fixed-point weights, edge clamp, no antialiasing,
 * and the vectorised vertical pass's rounding. Weights and offsets are tabulated once per call.
 */

import type { RgbImage } from './image.ts';

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

/** Round half to even, as lrintf does under the default FP mode. */
function rint(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

interface AxisTable {
  /** first / second source index per destination index, already clamped to the image */
  i0: Int32Array;
  i1: Int32Array;
  /** fixed-point weights (sum 2048) */
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

/** float32(v) / 255 for every byte value, matching `astype(float32) / 255`. */
const INV255 = (() => {
  const lut = new Float32Array(256);
  for (let v = 0; v < 256; v++) lut[v] = v / 255;
  return lut;
})();

/** Horizontal pass of one source row into fixed-point sums (weights total 2048). */
function hpass(
  src: Uint8Array, base: number, xo0: Int32Array, xo1: Int32Array, a0: Int32Array, a1: Int32Array, buf: Int32Array,
): void {
  const dw = xo0.length;
  for (let x = 0, k = 0; x < dw; x++, k += 3) {
    const p = base + xo0[x]!, q = base + xo1[x]!, w0 = a0[x]!, w1 = a1[x]!;
    buf[k] = src[p]! * w0 + src[q]! * w1;
    buf[k + 1] = src[p + 1]! * w0 + src[q + 1]! * w1;
    buf[k + 2] = src[p + 2]! * w0 + src[q + 2]! * w1;
  }
}

/**
 * Vertical pass, with the rounding of OpenCV's vectorised path: (S>>4)*beta keeps the high 16 bits,
 * the two terms are summed and rounded by 2 more bits (22 fractional bits in all).
 */
function vpass(s0: Int32Array, s1: Int32Array, b0: number, b1: number, row: Uint8Array): void {
  const n = row.length;
  for (let k = 0; k < n; k++) {
    const v = ((((s0[k]! >> 4) * b0) >> 16) + (((s1[k]! >> 4) * b1) >> 16) + 2) >> 2;
    row[k] = v > 255 ? 255 : v;
  }
}

/**
 * Bilinear resize of an HWC RGB image; each finished destination row (uint8 RGB, `dw*3` bytes, reused
 * between calls) is handed to `emit`. Rows are produced in order.
 */
export function resizeRows(
  img: RgbImage, dw: number, dh: number, emit: (y: number, row: Uint8Array) => void,
): void {
  const { data: src, width: sw, height: sh } = img;
  const row = new Uint8Array(dw * 3);
  if (dw === sw && dh === sh) {
    // OpenCV copies when the size is unchanged; the weights would be exact anyway.
    for (let y = 0; y < dh; y++) {
      row.set(src.subarray(y * sw * 3, (y + 1) * sw * 3));
      emit(y, row);
    }
    return;
  }
  const xt = axisTable(sw, dw, true);
  const yt = axisTable(sh, dh, false);
  const n = dw * 3;
  // Byte offsets (within a row) of the two source taps of each destination pixel.
  const xo0 = new Int32Array(dw), xo1 = new Int32Array(dw);
  for (let x = 0; x < dw; x++) { xo0[x] = xt.i0[x]! * 3; xo1[x] = xt.i1[x]! * 3; }
  // Two horizontally-resized source rows, reused while consecutive output rows share them.
  let bufA = new Int32Array(n), bufB = new Int32Array(n);
  let rowA = -1, rowB = -1;
  for (let y = 0; y < dh; y++) {
    const s0 = yt.i0[y]!, s1 = yt.i1[y]!;
    if (rowA !== s0) {
      if (rowB === s0) { const t = bufA; bufA = bufB; bufB = t; rowA = s0; rowB = -1; }
      else { hpass(src, s0 * sw * 3, xo0, xo1, xt.w0, xt.w1, bufA); rowA = s0; }
    }
    let r1: Int32Array;
    if (s1 === s0) r1 = bufA;
    else {
      if (rowB !== s1) { hpass(src, s1 * sw * 3, xo0, xo1, xt.w0, xt.w1, bufB); rowB = s1; }
      r1 = bufB;
    }
    vpass(bufA, r1, yt.w0[y]!, yt.w1[y]!, row);
    emit(y, row);
  }
}

/** HWC uint8 bilinear resize (OpenCV INTER_LINEAR arithmetic). */
export function resizeBilinear(img: RgbImage, dw: number, dh: number): RgbImage {
  const out = new Uint8Array(dw * dh * 3);
  resizeRows(img, dw, dh, (y, row) => out.set(row, y * dw * 3));
  return { data: out, width: dw, height: dh };
}

/**
 * Letterboxes `img` onto an `inputSize` canvas and writes it as float32 CHW /255 into
 * `out[offset .. offset + 3*H*W)`. Returns the ratio and the resized size.
 */
export function letterboxInto(img: RgbImage, inputSize: InputSize, out: Float32Array, offset = 0): LetterboxInfo {
  const [inH, inW] = inputHW(inputSize);
  const plane = inH * inW;
  if (offset < 0 || out.length < offset + 3 * plane) {
    throw new RangeError(`letterbox output too small: need ${offset + 3 * plane} floats, have ${out.length}`);
  }
  const info = letterboxGeometry(img.width, img.height, inH, inW);
  const { newWidth: w, newHeight: h } = info;
  const pad = INV255[PAD_VALUE]!;
  const rOff = offset, gOff = offset + plane, bOff = offset + 2 * plane;
  resizeRows(img, w, h, (y, row) => {
    const line = y * inW;
    for (let x = 0, k = 0; x < w; x++, k += 3) {
      out[rOff + line + x] = INV255[row[k]!]!;
      out[gOff + line + x] = INV255[row[k + 1]!]!;
      out[bOff + line + x] = INV255[row[k + 2]!]!;
    }
    if (w < inW) {
      out.fill(pad, rOff + line + w, rOff + line + inW);
      out.fill(pad, gOff + line + w, gOff + line + inW);
      out.fill(pad, bOff + line + w, bOff + line + inW);
    }
  });
  if (h < inH) {
    out.fill(pad, rOff + h * inW, rOff + plane);
    out.fill(pad, gOff + h * inW, gOff + plane);
    out.fill(pad, bOff + h * inW, bOff + plane);
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
