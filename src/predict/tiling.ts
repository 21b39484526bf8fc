/**
 * Tiled inference: the original's grid (square tiles of the model input size, `overlap_ratio`
 * overlap, the last row and column snapped flush to the image edge), per-tile offsets, and the merge
 * (per-class NMS at `iou`, then `max_det` over the whole image).
 */
import { LibreYOLOError } from '../errors.ts';
import type { RgbImage } from '../data/rgb-image.ts';
import { number } from '../util/options.ts';

export type TileBox = [number, number, number, number];

function checkInt(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new LibreYOLOError('config_type_error', `${name} must be an integer, got ${typeof v === 'boolean' ? 'bool' : typeof v}.`);
  }
  if (v <= 0) throw new LibreYOLOError('config_range_error', `${name} must be positive, got ${v}.`);
  return v;
}

/** Tile overlap: a fraction of the tile side in [0, 1) (1 would never advance). */
export const OVERLAP_RATIO = number({ min: 0, max: 1, maxOpen: true });

export function checkOverlapRatio(r: unknown): number {
  return OVERLAP_RATIO.check('overlap_ratio', r);
}

/** Tile rectangles `[x1, y1, x2, y2]` covering a `width x height` image, row-major, top to bottom. */
export function sliceBoxes(width: number, height: number, sliceSize: number, overlapRatio: number): TileBox[] {
  const W = checkInt('image_width', width), H = checkInt('image_height', height), S = checkInt('slice_size', sliceSize);
  const r = checkOverlapRatio(overlapRatio);
  const step = S - Math.floor(S * r);
  if (step <= 0) throw new LibreYOLOError('config_range_error', 'Tile step must be positive; reduce overlap_ratio or increase slice_size.');
  const slices: TileBox[] = [];
  for (let y = 0; ; y += step) {
    const y2 = Math.min(y + S, H);
    const y1 = y2 === H ? Math.max(0, y2 - S) : y;
    for (let x = 0; ; x += step) {
      const x2 = Math.min(x + S, W);
      const x1 = x2 === W ? Math.max(0, x2 - S) : x;
      slices.push([x1, y1, x2, y2]);
      if (x2 === W) break;
    }
    if (y2 === H) break;
  }
  return slices;
}

/** The square tile side: the input size, which must be square. */
export function tileSize(inputSize: [number, number]): number {
  const [h, w] = inputSize;
  if (h !== w) {
    throw new LibreYOLOError('invalid_imgsz', `Tiled inference requires a square imgsz (tiles are square). Got imgsz=(${h}, ${w}); pass a single int or disable tiling.`);
  }
  return h;
}

export function cropImage(img: RgbImage, [x1, y1, x2, y2]: TileBox): RgbImage {
  const w = x2 - x1, h = y2 - y1;
  const out = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) {
    const src = ((y1 + y) * img.width + x1) * 3;
    out.set(img.data.subarray(src, src + w * 3), y * w * 3);
  }
  return { data: out, width: w, height: h };
}

/** Shifts boxes (rows of xyxy) by a tile's origin, in place. */
export function offsetBoxes(xyxy: Float32Array, dx: number, dy: number): void {
  for (let k = 0; k < xyxy.length; k += 4) {
    xyxy[k] = xyxy[k]! + dx; xyxy[k + 1] = xyxy[k + 1]! + dy;
    xyxy[k + 2] = xyxy[k + 2]! + dx; xyxy[k + 3] = xyxy[k + 3]! + dy;
  }
}
