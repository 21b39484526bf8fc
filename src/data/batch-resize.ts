/**
 * A whole float batch resized on the host, as a multi-scale collate does after the per-sample
 * pipeline (D-FINE's: torch's F.interpolate, bilinear, align_corners False, no antialias).
 */
import type { HostTensor } from '../graph/tensor.ts';

/** Per output index along one axis: the two source taps and the second tap's weight. */
function taps(inSize: number, outSize: number): { i0: Int32Array; i1: Int32Array; l1: Float64Array } {
  const scale = inSize / outSize;
  const i0 = new Int32Array(outSize), i1 = new Int32Array(outSize), l1 = new Float64Array(outSize);
  for (let o = 0; o < outSize; o++) {
    const src = Math.max(0, scale * (o + 0.5) - 0.5);
    const a = Math.min(Math.floor(src), inSize - 1);
    i0[o] = a;
    i1[o] = a < inSize - 1 ? a + 1 : a;
    l1[o] = src - a;
  }
  return { i0, i1, l1 };
}

/**
 * `[B, C, H, W]` float32 resized to `[B, C, h, w]`: source coordinate (i + 0.5) in/out - 0.5,
 * clamped at 0, and the two nearest pixels per axis weighted linearly (the last pixel repeats).
 */
export function resizeBatchBilinear(t: HostTensor, h: number, w: number): HostTensor {
  const [B, C, H, W] = t.dims as [number, number, number, number];
  if (H === h && W === w) return t;
  const src = t.data as Float32Array;
  const out = new Float32Array(B * C * h * w);
  const ys = taps(H, h), xs = taps(W, w);
  for (let p = 0; p < B * C; p++) {
    const plane = p * H * W;
    for (let y = 0; y < h; y++) {
      const r0 = plane + ys.i0[y]! * W, r1 = plane + ys.i1[y]! * W, ly = ys.l1[y]!;
      const row = (p * h + y) * w;
      for (let x = 0; x < w; x++) {
        const a = xs.i0[x]!, b = xs.i1[x]!, lx = xs.l1[x]!;
        const top = (1 - lx) * src[r0 + a]! + lx * src[r0 + b]!;
        const bottom = (1 - lx) * src[r1 + a]! + lx * src[r1 + b]!;
        out[row + x] = (1 - ly) * top + ly * bottom;
      }
    }
  }
  return { dtype: 'float32', dims: [B, C, h, w], data: out };
}
