/**
 * Bilinear resampling taps as PyTorch's `interpolate(mode='bilinear', align_corners=False)` computes
 * them on float32 (no antialias): output index i reads source (i + 0.5) * in/out - 0.5, clamped at
 * 0, from index0 = floor and index1 = index0 + 1 (the same at the last source index), with weights
 * 1 - lambda and lambda, all in float32.
 */
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
