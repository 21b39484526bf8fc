/**
 * `save: true` with tiling writes the original's layout:
 * `runs/tiled_detections/<stem>_<family>_<size>_<YYYYmmdd_HHMMSS_ffffff>/` holding `tiles/tile_NNN.<ext>`
 * (the raw crops), `final_image.<ext>` (boxes drawn), `grid_visualization.<ext>` (tile outlines) and
 * `metadata.json`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, extname, join, resolve } from 'node:path';
import type { RgbImage } from '../data/rgb-image.ts';
import type { Results } from './results.ts';
import { insideOrThrow, safeFileName, stageDir } from '../util/fs.ts';
import { drawDetections, encodeImage, formatForExt, type ImageFormat } from './save.ts';
import type { TileBox } from './tiling.ts';

const pad = (v: number, n = 2): string => String(v).padStart(n, '0');

/** Local time as `%Y%m%d_%H%M%S_%f` (microseconds from the high-resolution clock). */
export function timestamp(date = new Date()): string {
  const micros = date.getMilliseconds() * 1000 + Number(process.hrtime.bigint() / 1000n % 1000n);
  return `${date.getFullYear()}${pad(date.getMonth() + 1)}${pad(date.getDate())}_${pad(date.getHours())}${pad(date.getMinutes())}${pad(date.getSeconds())}_${pad(micros, 6)}`;
}

/** Tile outlines in red, thin (2 px up to 2500 px images, then growing slowly) so the tiles' content stays visible. */
export function gridSvg(width: number, height: number, slices: readonly TileBox[]): string {
  const lw = Math.max(2, Math.round(Math.max(width, height) / 1000));
  const rects = slices.map(([x1, y1, x2, y2]) => `<rect x="${x1}" y="${y1}" width="${x2 - x1}" height="${y2 - y1}" fill="none" stroke="#FF0000" stroke-width="${lw}"/>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${rects.join('')}</svg>`;
}

export interface TiledSaveInput {
  image: RgbImage;
  result: Results;
  tiles: readonly RgbImage[];
  slices: readonly TileBox[];
  stem: string;
  family: string;
  size: string;
  ext: string;
  outputPath?: string;
  baseDir: string;
  tileSize: number;
  overlapRatio: number;
  conf: number;
  iou: number;
}

export async function saveTiled(s: TiledSaveInput): Promise<{ dir: string; tilesPath: string; gridPath: string }> {
  const format = formatForExt(s.ext);
  const parent = s.outputPath
    ? (extname(s.outputPath) ? dirname(resolve(s.baseDir, s.outputPath)) : resolve(s.baseDir, s.outputPath))
    : join(resolve(s.baseDir), 'runs', 'tiled_detections');
  // Written under a hidden partial name and renamed when metadata.json is in: a killed run leaves
  // no folder under the final name without its metadata or with truncated tiles.
  // stem, family and size come from files (image names, model metadata): one safe segment each.
  const name = `${safeFileName(s.stem)}_${safeFileName(s.family)}_${safeFileName(s.size)}_${timestamp()}`;
  insideOrThrow(parent, name, 'the tiled detections folder');
  const staged = await stageDir(parent, name);
  try {
    await writeTiledFolder(staged.path, s, format);
  } catch (err) {
    await staged.discard();
    throw err;
  }
  const dir = await staged.publish();
  return { dir, tilesPath: join(dir, 'tiles'), gridPath: join(dir, `grid_visualization.${s.ext}`) };
}

async function writeTiledFolder(dir: string, s: TiledSaveInput, format: ImageFormat): Promise<void> {
  const tilesPath = join(dir, 'tiles');
  await mkdir(tilesPath, { recursive: true });
  await Promise.all(s.tiles.map(async (t, k) => writeFile(join(tilesPath, `tile_${pad(k, 3)}.${s.ext}`), await encodeImage(t, format))));
  await writeFile(join(dir, `final_image.${s.ext}`), await drawDetections(s.image, s.result, format));
  const gridPath = join(dir, `grid_visualization.${s.ext}`);
  await writeFile(gridPath, await encodeImage(s.image, format, gridSvg(s.image.width, s.image.height, s.slices)));
  const metadata = {
    model: s.family,
    size: s.size,
    image_source: s.result.path ?? 'PIL/numpy input',
    original_size: [s.image.width, s.image.height],
    num_tiles: s.slices.length,
    tile_size: s.tileSize,
    overlap_ratio: s.overlapRatio,
    num_detections: s.result.length,
    conf: s.conf,
    iou: s.iou,
  };
  await writeFile(join(dir, 'metadata.json'), `${JSON.stringify(metadata, null, 2)}\n`);
}
