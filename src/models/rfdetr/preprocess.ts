/**
 * RF-DETR predict preprocessing (rfdetr.md 4.1): stretch to the input size with Pillow's BILINEAR
 * (antialiased) filter, then per channel x = float32(u8) / 255 and (x - mean) / std with the ImageNet
 * mean and std, each step rounded to float32 as the original's numpy code does. Boxes map back by
 * the separate x and y ratios.
 */
import type { RgbImage } from '../../data/image.ts';
import { resizePilBilinear } from '../../data/pil-resize.ts';
import type { PreprocessPlan } from '../registry.ts';

export const IMAGENET_MEAN = [0.485, 0.456, 0.406] as const;
export const IMAGENET_STD = [0.229, 0.224, 0.225] as const;

/** The 256 float32 values each u8 level becomes in each channel. */
const LEVELS = IMAGENET_MEAN.map((m, c) => {
  const mean = Math.fround(m);
  const std = Math.fround(IMAGENET_STD[c]!);
  return Float32Array.from({ length: 256 }, (_, u) => Math.fround(Math.fround(Math.fround(u / 255) - mean) / std));
});

export function rfdetrPreprocess(image: RgbImage, size: [number, number]): PreprocessPlan {
  const [h, w] = size;
  return {
    dims: [1, 3, h, w],
    dtype: 'float32',
    ratio: w / image.width,
    ratioY: h / image.height,
    write(out, offset) {
      const px = resizePilBilinear(image, w, h).data;
      const plane = h * w;
      for (let c = 0; c < 3; c++) {
        const lut = LEVELS[c]!;
        const base = offset + c * plane;
        for (let k = 0; k < plane; k++) out[base + k] = lut[px[k * 3 + c]!]!;
      }
    },
  };
}
