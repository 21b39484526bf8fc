/**
 * Bilinear resampling taps as PyTorch's `interpolate(mode='bilinear', align_corners=False)` computes
 * them on float32 (no antialias): output index i reads source (i + 0.5) * in/out - 0.5, clamped at
 * 0, from index0 = floor and index1 = index0 + 1 (the same at the last source index), with weights
 * 1 - lambda and lambda, all in float32.
 */
import type { RunBuilder } from './rle.ts';

const f32 = Math.fround;

export interface BilinearTaps {
  i0: Int32Array;
  i1: Int32Array;
  /** Weight of `i1` (that of `i0` is `w0`). */
  w1: Float32Array;
  w0: Float32Array;
}

export function bilinearTaps(inSize: number, outSize: number): BilinearTaps {
  const scale = f32(inSize / outSize);
  const i0 = new Int32Array(outSize), i1 = new Int32Array(outSize), w0 = new Float32Array(outSize), w1 = new Float32Array(outSize);
  for (let i = 0; i < outSize; i++) {
    const real = Math.max(f32(f32(scale * f32(i + 0.5)) - 0.5), 0);
    const idx = Math.min(Math.trunc(real), inSize - 1);
    const lambda = Math.min(Math.max(f32(real - idx), 0), 1);
    i0[i] = idx;
    i1[i] = idx + (idx < inSize - 1 ? 1 : 0);
    w1[i] = lambda;
    w0[i] = f32(1 - lambda);
  }
  return { i0, i1, w0, w1 };
}

/**
 * The output index range [lo, hi) whose taps read any source index in [from, to); the taps are
 * monotonic, so every other output index reads only sources outside it.
 */
export function tapRange(taps: BilinearTaps, from: number, to: number): [number, number] {
  const n = taps.i0.length;
  let lo = 0;
  while (lo < n && taps.i1[lo]! < from) lo++;
  let hi = n;
  while (hi > lo && taps.i0[hi - 1]! >= to) hi--;
  return [lo, hi];
}

/** A resampled window: rows [r0, r1) x columns [c0, c1) of the output, row-major. */
export interface MapWindow {
  data: Float32Array;
  r0: number; r1: number; c0: number; c1: number;
}

/**
 * Resamples `src` (a `[r0, r1) x [c0, c1)` window of a larger map, zero elsewhere) through row and
 * column taps; returns the window of the output that can be nonzero, limited to `maxRows x maxCols`.
 * Separable: each source row of the window is interpolated along x once, then output rows mix two of
 * those (the same sums as the 2-D formula wa * (wp * a + wq * b) + wb * (wp * c + wq * d)).
 */
export function resampleWindow(src: Float32Array, r0: number, r1: number, c0: number, c1: number, rows: BilinearTaps, cols: BilinearTaps, maxRows: number, maxCols: number):
  MapWindow {
  const [y0, y1raw] = tapRange(rows, r0, r1);
  const [x0, x1raw] = tapRange(cols, c0, c1);
  const y1 = Math.min(y1raw, maxRows), x1 = Math.min(x1raw, maxCols);
  const h = Math.max(0, y1 - y0), w = Math.max(0, x1 - x0);
  const out = new Float32Array(h * w);
  if (h === 0 || w === 0) return { data: out, r0: y0, r1: y0, c0: x0, c1: x0 };
  const sw = c1 - c0, sh = r1 - r0;
  // Along x: one row of w values per source row of the window.
  const across = new Float64Array(sh * w);
  for (let x = 0; x < w; x++) {
    const ox = x0 + x;
    const p = cols.i0[ox]! - c0, q = cols.i1[ox]! - c0, wp = cols.w0[ox]!, wq = cols.w1[ox]!;
    const pIn = p >= 0 && p < sw, qIn = q >= 0 && q < sw;
    for (let r = 0; r < sh; r++) {
      const row = r * sw;
      across[r * w + x] = wp * (pIn ? src[row + p]! : 0) + wq * (qIn ? src[row + q]! : 0);
    }
  }
  for (let y = 0; y < h; y++) {
    const oy = y0 + y;
    const a = rows.i0[oy]! - r0, b = rows.i1[oy]! - r0, wa = rows.w0[oy]!, wb = rows.w1[oy]!;
    const aIn = a >= 0 && a < sh, bIn = b >= 0 && b < sh;
    const o = y * w;
    for (let x = 0; x < w; x++) out[o + x] = wa * (aIn ? across[a * w + x]! : 0) + wb * (bIn ? across[b * w + x]! : 0);
  }
  return { data: out, r0: y0, r1: y0 + h, c0: x0, c1: x0 + w };
}

/** Adds the pixels of `window` above `threshold` (strictly) to `builder`, as runs of a `width`-wide image. */
export function thresholdWindow(window: MapWindow, threshold: number, width: number, builder: RunBuilder): void {
  const w = window.c1 - window.c0;
  for (let y = window.r0; y < window.r1; y++) {
    const row = (y - window.r0) * w;
    let start = -1;
    for (let x = 0; x <= w; x++) {
      const on = x < w && window.data[row + x]! > threshold;
      if (on && start < 0) start = x;
      else if (!on && start >= 0) { builder.set(y * width + window.c0 + start, y * width + window.c0 + x); start = -1; }
    }
  }
}
