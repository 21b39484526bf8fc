/**
 * YOLO label files: one `.txt` per image, one object per row `class cx cy w h` normalised to the
 * image (a row with more numbers is a polygon `class x1 y1 x2 y2 ...` whose extent is the box).
 * A missing file means "no objects". Parsing is strict and names `file:line` in every error.
 */

import { readFile } from 'node:fs/promises';
import { extname, sep } from 'node:path';
import { LibreYOLOError } from '../errors.ts';

/** Labels of one image: `n` rows `[cls, cx, cy, w, h]`, normalised, as stored. */
export interface ImageLabels {
  /** `n * 5` floats: cls, cx, cy, w, h */
  rows: Float32Array;
  n: number;
}

export const EMPTY_LABELS: ImageLabels = Object.freeze({ rows: new Float32Array(0), n: 0 }) as ImageLabels;

/** Coordinates may exceed [0, 1] by this much (rounding in converters) before a row is rejected. */
export const COORD_TOLERANCE = 0.01;

/**
 * Label path of an image: the last `images` path component becomes `labels`, the extension `.txt`.
 * Without an `images` component the label file sits beside the image.
 */
export function labelPathFor(imagePath: string): string {
  const a = `${sep}images${sep}`;
  const i = imagePath.lastIndexOf(a);
  const swapped = i < 0 ? imagePath : `${imagePath.slice(0, i)}${sep}labels${sep}${imagePath.slice(i + a.length)}`;
  const ext = extname(swapped);
  return `${ext ? swapped.slice(0, -ext.length) : swapped}.txt`;
}

function invalid(file: string, line: number, what: string): LibreYOLOError {
  return new LibreYOLOError('data_invalid', `Invalid label ${file}:${line}: ${what}`, {
    suggestion: 'Each row must be "class cx cy w h" with a non-negative integer class id below nc and coordinates normalised to 0..1.',
  });
}

/**
 * Parses the text of a label file. `nc` bounds class ids (pass Infinity to skip the check).
 * Blank lines are ignored; everything else must be a well-formed row.
 */
export function parseLabels(text: string, file: string, nc: number): ImageLabels {
  const lines = text.split(/\r?\n/);
  const out: number[] = [];
  for (let li = 0; li < lines.length; li++) {
    const line = lines[li]!.trim();
    if (line === '') continue;
    const toks = line.split(/\s+/);
    const lineNo = li + 1;
    const nums = toks.map(Number);
    const bad = toks.findIndex((t, k) => !Number.isFinite(nums[k]!) || t === '');
    if (bad >= 0) throw invalid(file, lineNo, `'${toks[bad]}' is not a number (row: "${line}")`);
    const cls = nums[0]!;
    if (!Number.isInteger(cls) || cls < 0) throw invalid(file, lineNo, `class id must be a non-negative integer, got '${toks[0]}'`);
    if (cls >= nc) throw invalid(file, lineNo, `class id ${cls} is out of range: the dataset has nc=${nc} (ids 0..${nc - 1})`);
    let cx: number, cy: number, w: number, h: number;
    if (toks.length === 5) {
      [cx, cy, w, h] = [nums[1]!, nums[2]!, nums[3]!, nums[4]!];
      if (w < 0 || h < 0) throw invalid(file, lineNo, `negative width or height (${w}, ${h})`);
      const lo = -COORD_TOLERANCE, hi = 1 + COORD_TOLERANCE;
      if (cx - w / 2 < lo || cy - h / 2 < lo || cx + w / 2 > hi || cy + h / 2 > hi) {
        const pixels = [cx, cy, w, h].some((v) => v > 1 + COORD_TOLERANCE);
        throw invalid(file, lineNo, `box (cx=${cx}, cy=${cy}, w=${w}, h=${h}) extends outside the image` +
          (pixels ? '; coordinates look like pixels, but YOLO labels are normalised to 0..1' : ''));
      }
    } else if (toks.length >= 7 && toks.length % 2 === 1) {
      // polygon: class x1 y1 x2 y2 ... -> its extent
      let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
      for (let k = 1; k < toks.length; k += 2) {
        const x = nums[k]!, y = nums[k + 1]!;
        if (x < -COORD_TOLERANCE || y < -COORD_TOLERANCE || x > 1 + COORD_TOLERANCE || y > 1 + COORD_TOLERANCE) {
          throw invalid(file, lineNo, `polygon point (${x}, ${y}) is outside 0..1 (YOLO labels are normalised)`);
        }
        x1 = Math.min(x1, x); y1 = Math.min(y1, y); x2 = Math.max(x2, x); y2 = Math.max(y2, y);
      }
      [cx, cy, w, h] = [(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1];
    } else {
      throw invalid(file, lineNo, `expected 5 values "class cx cy w h" (or a polygon "class x1 y1 x2 y2 x3 y3 ..."), got ${toks.length}`);
    }
    out.push(cls, cx, cy, w, h);
  }
  return { rows: Float32Array.from(out), n: out.length / 5 };
}

/** Reads and parses a label file; a missing file is an image without objects. */
export async function readLabels(file: string, nc: number): Promise<ImageLabels> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return EMPTY_LABELS;
    if (code === 'EISDIR') throw new LibreYOLOError('data_invalid', `Label path is a directory, expected a .txt file: ${file}`);
    throw new LibreYOLOError('io_error', `Cannot read label file ${file}: ${(err as Error).message}`, { cause: err });
  }
  return parseLabels(text, file, nc);
}

/** Formats rows `[cls, cx, cy, w, h]` as label-file text (6 decimals, as common converters write). */
export function formatLabels(rows: ArrayLike<number>): string {
  let s = '';
  for (let i = 0; i + 4 < rows.length; i += 5) {
    s += `${Math.round(rows[i]!)} ${rows[i + 1]!.toFixed(6)} ${rows[i + 2]!.toFixed(6)} ${rows[i + 3]!.toFixed(6)} ${rows[i + 4]!.toFixed(6)}\n`;
  }
  return s;
}

/**
 * Pixel boxes `[cls, x1, y1, x2, y2]` (n * 5) from normalised labels on a `width x height` image,
 * multiplied by `scale` (the original pre-scales boxes with the load ratio).
 */
export function labelsToPixelBoxes(labels: ImageLabels, width: number, height: number, scale = 1): Float32Array {
  const { rows, n } = labels;
  const out = new Float32Array(n * 5);
  const sx = width * scale, sy = height * scale;
  for (let i = 0; i < n; i++) {
    const o = i * 5;
    const cx = rows[o + 1]!, cy = rows[o + 2]!, w = rows[o + 3]!, h = rows[o + 4]!;
    out[o] = rows[o]!;
    out[o + 1] = (cx - w / 2) * sx;
    out[o + 2] = (cy - h / 2) * sy;
    out[o + 3] = (cx + w / 2) * sx;
    out[o + 4] = (cy + h / 2) * sy;
  }
  return out;
}
