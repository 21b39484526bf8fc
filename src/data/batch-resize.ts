/**
 * A whole float batch resized on the host, as a multi-scale collate does after the per-sample
 * pipeline (D-FINE's per batch, RF-DETR's per step): PyTorch's `F.interpolate(mode='bilinear',
 * align_corners=False)` without antialias, per output pixel h0·(w0·a + w1·b) + h1·(w0·c + w1·d) in
 * float32. Normalised targets need no change.
 */
import type { HostTensor } from '../graph/tensor.ts';
import { bilinearTaps } from './masks/resize.ts';

const f32 = Math.fround;

/** `[B, C, H, W]` float32 -> `[B, C, h, w]` (the input itself when the size is unchanged). */
export function resizeBatchBilinear(t: HostTensor, h: number, w: number): HostTensor {
  if (t.dims.length !== 4 || !(t.data instanceof Float32Array)) throw new RangeError(`resizeBatchBilinear: needs a float32 [B, C, H, W] batch, got ${t.dtype} [${t.dims.join(', ')}]`);
  if (!(Number.isInteger(h) && Number.isInteger(w) && h > 0 && w > 0)) throw new RangeError(`resizeBatchBilinear: bad output size ${h} x ${w}`);
  const [B, C, H, W] = t.dims as [number, number, number, number];
  if (H === h && W === w) return t;
  const src = t.data;
  const ty = bilinearTaps(H, h), tx = bilinearTaps(W, w);
  const out = new Float32Array(B * C * h * w);
  for (let p = 0; p < B * C; p++) {
    const plane = p * H * W, dst = p * h * w;
    for (let y = 0; y < h; y++) {
      const r0 = plane + ty.i0[y]! * W, r1 = plane + ty.i1[y]! * W, h0 = ty.w0[y]!, h1 = ty.w1[y]!;
      for (let x = 0; x < w; x++) {
        const a = tx.i0[x]!, b = tx.i1[x]!, w0 = tx.w0[x]!, w1 = tx.w1[x]!;
        const top = f32(f32(w0 * src[r0 + a]!) + f32(w1 * src[r0 + b]!));
        const bot = f32(f32(w0 * src[r1 + a]!) + f32(w1 * src[r1 + b]!));
        out[dst + y * w + x] = f32(f32(h0 * top) + f32(h1 * bot));
      }
    }
  }
  return { dtype: 'float32', dims: [B, C, h, w], data: out };
}
