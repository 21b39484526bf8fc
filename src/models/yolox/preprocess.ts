/**
 * YOLOX predict preprocessing: r = min(H/h0, W/w0), resize to (int(w0 r), int(h0 r))
 * with Pillow's BILINEAR filter (antialiased when downscaling), paste top-left on a 114 canvas, then
 * BGR planes of float32 0..255 (no /255, no mean/std).
 * The resize is Pillow's integer arithmetic (data/pil-resize.ts).
 */
import type { RgbImage } from '../../data/rgb-image.ts';
import { letterboxGeometry, PAD_VALUE } from '../../data/letterbox.ts';
import { resizePilBilinear } from '../../data/pil-resize.ts';
import type { PreprocessPlan } from '../registry.ts';

/** The letterboxed BGR 0..255 network input of one image on an `[h, w]` canvas. */
export function yoloxPreprocess(image: RgbImage, size: [number, number]): PreprocessPlan {
  const [h, w] = size;
  const { ratio, newWidth, newHeight } = letterboxGeometry(image.width, image.height, h, w);
  return {
    dims: [1, 3, h, w],
    dtype: 'float32',
    ratio,
    write(out, offset) {
      const resized = resizePilBilinear(image, newWidth, newHeight);
      const plane = h * w;
      out.fill(PAD_VALUE, offset, offset + 3 * plane);
      const px = resized.data;
      for (let y = 0; y < newHeight; y++) {
        let s = y * newWidth * 3;
        const row = offset + y * w;
        for (let x = 0; x < newWidth; x++, s += 3) {
          out[row + x] = px[s + 2]!; // B
          out[row + plane + x] = px[s + 1]!; // G
          out[row + 2 * plane + x] = px[s]!; // R
        }
      }
    },
  };
}
