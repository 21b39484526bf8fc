/**
 * torch's `F.interpolate(mode="bilinear", align_corners=False)` (no antialias) on a float32 NCHW
 * batch: source coordinate (i + 0.5) x in / out - 0.5, clamped at 0, the upper tap clamped to the
 * last row/column, weights in float32. Used to resize a whole train batch to the step's size
 * (RF-DETR's multi-scale); normalised targets need no change.
 */
import type { HostTensor } from '../graph/tensor.ts';

const f = Math.fround;

interface Taps { i0: Int32Array; i1: Int32Array; w0: Float32Array; w1: Float32Array }

function taps(inSize: number, outSize: number): Taps {
  const scale = f(inSize / outSize);
  const t: Taps = { i0: new Int32Array(outSize), i1: new Int32Array(outSize), w0: new Float32Array(outSize), w1: new Float32Array(outSize) };
  for (let i = 0; i < outSize; i++) {
    const src = Math.max(f(f(scale * f(i + 0.5)) - 0.5), 0);
    const i0 = Math.trunc(src);
    const l1 = f(src - i0);
    t.i0[i] = i0;
    t.i1[i] = i0 < inSize - 1 ? i0 + 1 : i0;
    t.w1[i] = l1;
    t.w0[i] = f(1 - l1);
  }
  return t;
}

export function interpolateBilinear(x: HostTensor, height: number, width: number): HostTensor {
  const [n, c, h, w] = x.dims as [number, number, number, number];
  if (h === height && w === width) return x;
  const src = x.data as Float32Array;
  const out = new Float32Array(n * c * height * width);
  const ty = taps(h, height), tx = taps(w, width);
  for (let p = 0; p < n * c; p++) {
    const so = p * h * w, oo = p * height * width;
    for (let y = 0; y < height; y++) {
      const r0 = so + ty.i0[y]! * w, r1 = so + ty.i1[y]! * w;
      const a0 = ty.w0[y]!, a1 = ty.w1[y]!;
      for (let xx = 0; xx < width; xx++) {
        const c0 = tx.i0[xx]!, c1 = tx.i1[xx]!, b0 = tx.w0[xx]!, b1 = tx.w1[xx]!;
        const top = f(f(b0 * src[r0 + c0]!) + f(b1 * src[r0 + c1]!));
        const bot = f(f(b0 * src[r1 + c0]!) + f(b1 * src[r1 + c1]!));
        out[oo + y * width + xx] = f(f(a0 * top) + f(a1 * bot));
      }
    }
  }
  return { dtype: 'float32', dims: [n, c, height, width], data: out };
}
