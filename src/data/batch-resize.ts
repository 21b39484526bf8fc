/**
 * A batch of float CHW images resized as PyTorch's `F.interpolate(mode='bilinear',
 * align_corners=False)` without antialias (RF-DETR's per-step multi-scale resize of the whole batch):
 * per output pixel h0w·(w0w·a + w1w·b) + h1w·(w0w·c + w1w·d), in float32. Normalised targets need no change.
 */
import { bilinearTaps } from './masks/resize.ts';

const f32 = Math.fround;

/** `images` `[B, C, inH, inW]` -> a new `[B, C, outH, outW]`. */
export function resizeBatchBilinear(images: Float32Array, dims: { batch: number; channels: number; inH: number; inW: number }, outH: number, outW: number): Float32Array {
  const { batch, channels, inH, inW } = dims;
  if (images.length !== batch * channels * inH * inW) throw new RangeError(`resizeBatchBilinear: ${images.length} values do not make [${batch}, ${channels}, ${inH}, ${inW}]`);
  if (!(Number.isInteger(outH) && Number.isInteger(outW) && outH > 0 && outW > 0)) throw new RangeError(`resizeBatchBilinear: bad output size ${outH} x ${outW}`);
  if (outH === inH && outW === inW) return images.slice();
  const ty = bilinearTaps(inH, outH), tx = bilinearTaps(inW, outW);
  const out = new Float32Array(batch * channels * outH * outW);
  for (let p = 0; p < batch * channels; p++) {
    const src = p * inH * inW, dst = p * outH * outW;
    for (let y = 0; y < outH; y++) {
      const r0 = src + ty.i0[y]! * inW, r1 = src + ty.i1[y]! * inW, h0 = ty.w0[y]!, h1 = ty.w1[y]!;
      for (let x = 0; x < outW; x++) {
        const a = tx.i0[x]!, b = tx.i1[x]!, w0 = tx.w0[x]!, w1 = tx.w1[x]!;
        const top = f32(f32(w0 * images[r0 + a]!) + f32(w1 * images[r0 + b]!));
        const bot = f32(f32(w0 * images[r1 + a]!) + f32(w1 * images[r1 + b]!));
        out[dst + y * outW + x] = f32(f32(h0 * top) + f32(h1 * bot));
      }
    }
  }
  return out;
}
