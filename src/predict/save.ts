/**
 * `save=true` output: draws boxes and labels (an SVG overlay composited by sharp) and writes the image
 * without ever overwriting: the run folder `runs/detect/predict[N]` is claimed once per process with a
 * non-recursive mkdir (as the original), and each image lands complete under a free name (writeUnique),
 * so the folder only ever holds whole images.
 */

import { printable } from '../util/text.ts';
import { mkdir, stat } from 'node:fs/promises';
import { dirname, extname, join, resolve } from 'node:path';
import sharp from 'sharp';
import { LibreYOLOError } from '../errors.ts';
import type { RgbImage } from '../data/rgb-image.ts';
import { isHttpUrl } from '../data/image.ts';
import { pathStem, urlStem } from '../data/sources.ts';
import { isErrno, writeUnique } from '../util/fs.ts';
import type { Results } from './results.ts';
import { drawMasks } from './draw-masks.ts';

import { classColour, textColour } from './colours.ts';

export { classColour };

/** Characters XML 1.0 cannot carry even as references (controls, lone surrogates), plus C1 controls. */
const XML_UNSAFE = /[\u0000-\u001f\u007f-\u009f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Label text for SVG: markup characters as references, unsafe ones as U+FFFD (names may come from any file). */
export function xmlEscape(s: string): string {
  return s.replace(XML_UNSAFE, '\ufffd').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const fmt = (v: number): string => (Math.round(v * 10) / 10).toString();

/** Below this label text stops being readable. */
const MIN_FONT_PX = 8;

/**
 * SVG overlay (same size as the image) with one rectangle and one label per box. Line width and font
 * grow with the image, but never past what the box can carry (a label about 0.4 of the box's short
 * side), so a crowd of small objects keeps labels that do not bury each other.
 */
export function detectionsSvg(width: number, height: number, result: Results): string {
  const imageLw = Math.max(2, Math.round((width + height) / 2 * 0.003));
  const imageFont = Math.max(11, Math.round(imageLw * 5.5));
  const boxes: string[] = [];
  const labels: string[] = [];
  const d = result.boxes.xyxyData;
  for (let i = 0; i < result.boxes.length; i++) {
    const cls = result.boxes.clsInt(i);
    const colour = classColour(cls);
    const x1 = d[i * 4]!, y1 = d[i * 4 + 1]!, x2 = d[i * 4 + 2]!, y2 = d[i * 4 + 3]!;
    const side = Math.max(0, Math.min(x2 - x1, y2 - y1));
    const lw = Math.min(imageLw, Math.max(1, Math.round(side / 20)));
    const fontSize = Math.min(imageFont, Math.max(MIN_FONT_PX, Math.round(side * 0.4)));
    const pad = Math.max(1, Math.round(fontSize * 0.2));
    const labelH = fontSize + 2 * pad;
    boxes.push(`<rect x="${fmt(x1)}" y="${fmt(y1)}" width="${fmt(Math.max(x2 - x1, 0))}" height="${fmt(Math.max(y2 - y1, 0))}" fill="none" stroke="${colour}" stroke-width="${lw}"/>`);
    // Escaped twice over: control and bidi characters as visible escapes, then markup as references.
    const text = `${printable(result.nameOf(cls))} ${result.boxes.confData[i]!.toFixed(2)}`;
    // DejaVu Sans averages ~0.62 em per character; the background only needs to be close.
    const labelW = Math.ceil(text.length * fontSize * 0.62) + 2 * pad;
    const lx = Math.min(Math.max(x1 - lw / 2, 0), Math.max(width - labelW, 0));
    const ly = y1 - lw / 2 - labelH >= 0 ? y1 - lw / 2 - labelH : Math.min(y1 + lw / 2, Math.max(height - labelH, 0));
    labels.push(
      `<rect x="${fmt(lx)}" y="${fmt(ly)}" width="${labelW}" height="${labelH}" fill="${colour}"/>` +
      `<text x="${fmt(lx + pad)}" y="${fmt(ly + pad + fontSize * 0.8)}" font-size="${fontSize}" fill="${textColour(colour)}">${xmlEscape(text)}</text>`,
    );
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<g>${boxes.join('')}</g>` +
    `<g font-family="DejaVu Sans, sans-serif">${labels.join('')}</g></svg>`;
}

export type ImageFormat = 'jpeg' | 'png' | 'webp' | 'tiff' | 'gif' | 'avif';

const FORMAT_BY_EXT: Record<string, ImageFormat> = {
  jpg: 'jpeg', jpeg: 'jpeg', png: 'png', webp: 'webp', tif: 'tiff', tiff: 'tiff', gif: 'gif', avif: 'avif',
};

/** Encoder for a file extension; unknown extensions are a config error. */
export function formatForExt(ext: string): ImageFormat {
  const f = FORMAT_BY_EXT[ext.toLowerCase().replace(/^\./, '')];
  if (f === undefined) {
    throw new LibreYOLOError('config_range_error', `Cannot save annotated images as '.${ext}': use one of ${Object.keys(FORMAT_BY_EXT).join(', ')}`);
  }
  return f;
}

/** Encodes RGB pixels, optionally with an SVG overlay of the same size composited on top. */
export async function encodeImage(image: RgbImage, format: ImageFormat = 'jpeg', overlaySvg?: string): Promise<Buffer> {
  const { width, height } = image;
  let pipe = sharp(image.data, { raw: { width, height, channels: 3 } });
  if (overlaySvg) {
    // Compositing the SVG adds an alpha channel; keep the output opaque RGB.
    pipe = pipe.composite([{ input: Buffer.from(overlaySvg), top: 0, left: 0 }]).removeAlpha();
  }
  switch (format) {
    case 'jpeg': return pipe.jpeg({ quality: 90 }).toBuffer();
    case 'png': return pipe.png().toBuffer();
    case 'webp': return pipe.webp({ quality: 90 }).toBuffer();
    case 'tiff': return pipe.tiff().toBuffer();
    case 'gif': return pipe.gif().toBuffer();
    case 'avif': return pipe.avif().toBuffer();
  }
}

/** The image with its detections drawn, encoded (JPEG by default). */
export async function drawDetections(image: RgbImage, result: Results, format: ImageFormat = 'jpeg'): Promise<Buffer> {
  // Masks go under the boxes and labels.
  const base = result.masks ? drawMasks(image, result.masks, result.boxes.clsData) : image;
  return encodeImage(base, format, result.boxes.length > 0 ? detectionsSvg(image.width, image.height, result) : undefined);
}

/**
 * Creates `parent/name`, or `name2`, `name3`, ... when taken; the non-recursive mkdir of the last
 * segment is the atomic claim, so concurrent processes never share a folder.
 */
export async function incrementDir(parent: string, name: string): Promise<string> {
  await mkdir(parent, { recursive: true });
  for (let n = 1; ; n++) {
    const dir = join(parent, n === 1 ? name : `${name}${n}`);
    try {
      await mkdir(dir);
      return dir;
    } catch (e) {
      if (!isErrno(e, 'EEXIST')) throw e;
    }
  }
}

export const DEFAULT_SAVE_DIR = join('runs', 'detect', 'predict');

const saveDirCache = new Map<string, Promise<string>>();

/** `<baseDir>/runs/detect/predict[N]`, claimed on first use and reused for the rest of the process. */
export function defaultSaveDir(baseDir: string = process.cwd()): Promise<string> {
  const key = resolve(baseDir);
  let dir = saveDirCache.get(key);
  if (dir === undefined) {
    dir = incrementDir(join(key, 'runs', 'detect'), 'predict');
    dir.catch(() => saveDirCache.delete(key));
    saveDirCache.set(key, dir);
  }
  return dir;
}

export { writeUnique }; // the save-folder writer, kept importable from here

export interface SaveOptions {
  /** a folder (existing, ending in a separator, or without suffix) or a file path */
  outputPath?: string;
  /** extension when saving into a folder; default `jpg` */
  ext?: string;
  /** where the default `runs/detect/predict[N]` lives; default the working directory */
  baseDir?: string;
  /** file stem for in-memory sources (`image<N>` in batches); default `inference` */
  stem?: string;
}

/** Stem for a result: its file or URL path, else the given stem, else `inference`. */
export function saveStemFor(result: Results, stem?: string): string {
  if (result.path) return (isHttpUrl(result.path) ? urlStem(result.path) : pathStem(result.path)) || 'inference';
  return stem || 'inference';
}

function normaliseExt(ext: string): string {
  const e = ext.trim().toLowerCase().replace(/^\./, '');
  if (!e) throw new LibreYOLOError('config_range_error', 'Save extension must not be empty.');
  return e;
}

async function isDirectory(p: string): Promise<boolean> {
  try { return (await stat(p)).isDirectory(); } catch { return false; }
}

/** Draws `result` on `image` and writes it; sets and returns `result.saved_path`. */
export async function saveAnnotated(image: RgbImage, result: Results, opts: SaveOptions = {}): Promise<string> {
  const base = opts.baseDir ?? process.cwd();
  const out = opts.outputPath;
  const target = out ? resolve(base, out) : null;
  const asFile = out !== undefined && target !== null && !/[\\/]$/.test(out) && extname(target) !== '' && !await isDirectory(target);
  // Validate the extension before any folder is created.
  const ext = normaliseExt(asFile ? extname(target) : (opts.ext ?? 'jpg'));
  const format = formatForExt(ext);
  let dir: string;
  if (target === null) dir = await defaultSaveDir(base);
  else {
    dir = asFile ? dirname(target) : target;
    await mkdir(dir, { recursive: true });
  }
  const stem = asFile ? pathStem(target!) : saveStemFor(result, opts.stem);
  const path = await writeUnique(dir, stem, ext, await drawDetections(image, result, format));
  result.saved_path = path;
  return path;
}
