/**
 * The random affine YOLOX applies after its mosaic: rotation U(-degrees, degrees) and
 * scale U(scale) about the origin, shear x/y tan(U(-shear, shear) deg), translation
 * U(-translate, translate) x the output side; the image is warped onto the output canvas (bilinear,
 * border 114, as cv2.warpAffine) and each box becomes the axis-aligned bound of its four warped
 * corners, clipped to the canvas (rings, when the sample has them, are warped too and give the
 * boxes: `affineSegments`). Nothing is filtered here: boxes that end up too small are dropped
 * by the train transform, as the original does.
 */
import { LibreYOLOError } from '../errors.ts';
import type { RgbImage } from './rgb-image.ts';
import { PAD_VALUE } from './letterbox.ts';

type Rand = () => number;

export interface AffineHyp {
  /** Maximum rotation, degrees. */
  degrees: number;
  /** Maximum translation, a fraction of the output side. */
  translate: number;
  /** Scale range `[min, max]` (the config's `mosaic_scale`); min must be > 0. */
  scale: readonly [number, number];
  /** Maximum shear, degrees. */
  shear: number;
}

/** Row-major 2x3 matrix `[a, b, c, d, e, f]`: x' = a x + b y + c, y' = d x + e y + f. */
export type Affine = [number, number, number, number, number, number];

const uniform = (rand: Rand, lo: number, hi: number): number => lo + (hi - lo) * rand();

/**
 * Draws the matrix as the original: angle, scale, shear x, shear y, translation x, y (in that
 * order). The rotation is cv2.getRotationMatrix2D about (0, 0): [[s cos, s sin], [-s sin, s cos]];
 * row 0 gets `shear_y` x row 1 added, row 1 `shear_x` x row 0 (both computed from the rotation).
 */
export function drawAffine(rand: Rand, width: number, height: number, hyp: AffineHyp): Affine {
  const angle = uniform(rand, -hyp.degrees, hyp.degrees) * (Math.PI / 180);
  const scale = uniform(rand, hyp.scale[0], hyp.scale[1]);
  if (!(scale > 0)) throw new LibreYOLOError('config_range_error', `mosaic_scale must be a range of positive scales, got [${hyp.scale.join(', ')}]`);
  const shearX = Math.tan(uniform(rand, -hyp.shear, hyp.shear) * (Math.PI / 180));
  const shearY = Math.tan(uniform(rand, -hyp.shear, hyp.shear) * (Math.PI / 180));
  const tx = uniform(rand, -hyp.translate, hyp.translate) * width;
  const ty = uniform(rand, -hyp.translate, hyp.translate) * height;
  const a = scale * Math.cos(angle), b = scale * Math.sin(angle);
  return [a + shearY * -b, b + shearY * a, tx, -b + shearX * a, a + shearX * b, ty];
}

/**
 * `img` warped by `m` onto a `width x height` canvas: each output pixel (x, y) samples the source at
 * m^-1 (x, y) bilinearly (pixel centres at integer coordinates, as OpenCV); neighbours outside the
 * source read 114.
 */
export function warpAffine(img: RgbImage, m: Affine, width: number, height: number): RgbImage {
  const [a, b, c, d, e, f] = m;
  const det = a * e - b * d;
  if (det === 0) throw new LibreYOLOError('config_range_error', 'the random affine matrix is singular (scale 0)');
  // inverse: x = ia x' + ib y' + ic, y = id x' + ie y' + if
  const ia = e / det, ib = -b / det, id = -d / det, ie = a / det;
  const ic = -(ia * c + ib * f), iff = -(id * c + ie * f);
  const { width: W, height: H, data: src } = img;
  const out = new Uint8Array(width * height * 3).fill(PAD_VALUE);
  const at = (x: number, y: number, ch: number): number => (x >= 0 && y >= 0 && x < W && y < H ? src[(y * W + x) * 3 + ch]! : PAD_VALUE);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const sx = ia * x + ib * y + ic, sy = id * x + ie * y + iff;
      if (sx <= -1 || sy <= -1 || sx >= W || sy >= H) continue;
      const x0 = Math.floor(sx), y0 = Math.floor(sy);
      const wx = sx - x0, wy = sy - y0;
      const o = (y * width + x) * 3;
      for (let ch = 0; ch < 3; ch++) {
        const top = at(x0, y0, ch) * (1 - wx) + at(x0 + 1, y0, ch) * wx;
        const bot = at(x0, y0 + 1, ch) * (1 - wx) + at(x0 + 1, y0 + 1, ch) * wx;
        out[o + ch] = Math.round(top * (1 - wy) + bot * wy);
      }
    }
  }
  return { data: out, width, height };
}

/** Boxes `[cls, x1, y1, x2, y2]` through `m`: the bound of the warped corners, clipped to the canvas. */
export function affineBoxes(boxes: Float32Array, m: Affine, width: number, height: number): Float32Array {
  const [a, b, c, d, e, f] = m;
  const out = new Float32Array(boxes.length);
  for (let i = 0; i < boxes.length; i += 5) {
    const x1 = boxes[i + 1]!, y1 = boxes[i + 2]!, x2 = boxes[i + 3]!, y2 = boxes[i + 4]!;
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (const [x, y] of [[x1, y1], [x2, y2], [x1, y2], [x2, y1]] as const) {
      const px = a * x + b * y + c, py = d * x + e * y + f;
      minX = Math.min(minX, px); maxX = Math.max(maxX, px);
      minY = Math.min(minY, py); maxY = Math.max(maxY, py);
    }
    const cx = (v: number): number => Math.min(Math.max(v, 0), width);
    const cy = (v: number): number => Math.min(Math.max(v, 0), height);
    out[i] = boxes[i]!;
    out[i + 1] = cx(minX); out[i + 2] = cy(minY); out[i + 3] = cx(maxX); out[i + 4] = cy(maxY);
  }
  return out;
}

/** Points per ring after resampling, as the original's `resample_segments`. */
export const SEGMENT_POINTS = 1000;

/**
 * The closed ring (first vertex appended) resampled at `n` points evenly spaced in vertex index
 * (linear interpolation between vertices, as `np.interp` over `linspace(0, K, n)`), so a warped ring
 * can be clipped point by point without losing its shape.
 */
export function resampleRing(ring: Float32Array, n = SEGMENT_POINTS): Float32Array {
  const k = ring.length / 2;
  const out = new Float32Array(n * 2);
  for (let j = 0; j < n; j++) {
    const t = n > 1 ? (j * k) / (n - 1) : 0;
    const i = Math.min(Math.floor(t), k - 1), w = t - i;
    const a = i * 2, b = ((i + 1) % k) * 2;
    out[j * 2] = ring[a]! + (ring[b]! - ring[a]!) * w;
    out[j * 2 + 1] = ring[a + 1]! + (ring[b + 1]! - ring[a + 1]!) * w;
  }
  return out;
}

/**
 * Segment rows through `m` (the original's segment path of its random perspective): each ring
 * resampled to `SEGMENT_POINTS`, every point warped; the box becomes the extent of the warped points
 * that lie on the canvas (`segment2box`; all zeros when none does, so the train transform drops it),
 * and the ring is clipped to that box. Classes are kept.
 */
export function affineSegments(boxes: Float32Array, segs: readonly Float32Array[], m: Affine, width: number, height: number): { boxes: Float32Array; segs: Float32Array[] } {
  const [a, b, c, d, e, f] = m;
  const out = new Float32Array(boxes.length);
  const rings = segs.map((ring, k) => {
    const r = resampleRing(ring);
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (let i = 0; i < r.length; i += 2) {
      const x = r[i]!, y = r[i + 1]!;
      const px = a * x + b * y + c, py = d * x + e * y + f;
      r[i] = px; r[i + 1] = py;
      if (px >= 0 && py >= 0 && px <= width && py <= height) {
        minX = Math.min(minX, px); maxX = Math.max(maxX, px);
        minY = Math.min(minY, py); maxY = Math.max(maxY, py);
      }
    }
    if (minX === Infinity) minX = minY = maxX = maxY = 0;
    for (let i = 0; i < r.length; i += 2) {
      r[i] = Math.min(Math.max(r[i]!, minX), maxX);
      r[i + 1] = Math.min(Math.max(r[i + 1]!, minY), maxY);
    }
    out[k * 5] = boxes[k * 5]!;
    out[k * 5 + 1] = minX; out[k * 5 + 2] = minY; out[k * 5 + 3] = maxX; out[k * 5 + 4] = maxY;
    return r;
  });
  return { boxes: out, segs: rings };
}

/**
 * The original's `random_affine`: a drawn matrix applied to the image (onto `size x size`) and its
 * boxes; with rings (segment training), the boxes come from the warped rings (`affineSegments`).
 */
export function randomAffine(item: { img: RgbImage; boxes: Float32Array; segs?: Float32Array[] }, size: number, hyp: AffineHyp, rand: Rand): { img: RgbImage; boxes: Float32Array; segs?: Float32Array[] } {
  const m = drawAffine(rand, size, size, hyp);
  const img = warpAffine(item.img, m, size, size);
  if (item.segs) return { img, ...affineSegments(item.boxes, item.segs, m, size, size) };
  return { img, boxes: affineBoxes(item.boxes, m, size, size) };
}
