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
  /**
   * Present when the file has a polygon row: per row, its ring `x1 y1 x2 y2 ...` normalised to the
   * image (null for a box row). Segment validation and training read masks from these.
   */
  segments?: (Float32Array | null)[];
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

/** Why a label row cannot be read at all (before any range check), in the dataset checker's words. */
export type LabelLineIssue =
  | { kind: 'fields'; fields: number; reason: string }
  | { kind: 'class'; token: string; reason: string }
  | { kind: 'number'; token: string; reason: string }
  | { kind: 'non_finite'; token: string; reason: string }
  | { kind: 'shape'; fields: number; reason: string };

/** One non-blank row of a label file as training reads it: the box, or why there is none. */
export type LabelLine =
  | { ok: true; fields: number; polygon: boolean; cls: number; cx: number; cy: number; w: number; h: number; points: Float64Array | null }
  | { ok: false; fields: number; issue: LabelLineIssue };

const NON_FINITE = /^[+-]?(nan|inf|infinity)$/i;

/**
 * Reads one label row: `class cx cy w h`, or a polygon `class x1 y1 x2 y2 x3 y3 ...` (an odd field
 * count of 7 or more) whose extent is the box. The class must be an integer (its range is checked by
 * the caller, who knows nc); coordinates must be finite numbers. Training (parseLabels) and the
 * dataset checker (`libreyolo doctor`) both read rows here, so they agree on what a row is.
 */
export function parseLabelLine(line: string): LabelLine {
  const toks = line.trim().split(/\s+/);
  const fields = toks.length;
  const fail = (issue: LabelLineIssue): LabelLine => ({ ok: false, fields, issue });
  if (fields < 5) return fail({ kind: 'fields', fields, reason: `expected 5 fields, got ${fields}` });
  const nums = new Float64Array(fields);
  for (let k = 0; k < fields; k++) {
    const t = toks[k]!;
    if (NON_FINITE.test(t)) {
      return fail(k === 0 ? { kind: 'class', token: t, reason: 'non-numeric value' } : { kind: 'non_finite', token: t, reason: 'non-finite value (nan/inf)' });
    }
    const v = Number(t);
    if (!Number.isFinite(v)) return fail({ kind: 'number', token: t, reason: 'non-numeric value' });
    nums[k] = v;
  }
  if (!Number.isInteger(nums[0]!)) return fail({ kind: 'class', token: toks[0]!, reason: 'non-numeric value' });
  if (fields === 5) {
    return { ok: true, fields, polygon: false, cls: nums[0]!, cx: nums[1]!, cy: nums[2]!, w: nums[3]!, h: nums[4]!, points: null };
  }
  if (fields < 7 || fields % 2 === 0) {
    return fail({ kind: 'shape', fields, reason: `expected 5 fields or a polygon (an odd count of 7 or more), got ${fields}` });
  }
  let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
  for (let k = 1; k < fields; k += 2) {
    const x = nums[k]!, y = nums[k + 1]!;
    x1 = Math.min(x1, x); y1 = Math.min(y1, y); x2 = Math.max(x2, x); y2 = Math.max(y2, y);
  }
  return { ok: true, fields, polygon: true, cls: nums[0]!, cx: (x1 + x2) / 2, cy: (y1 + y2) / 2, w: x2 - x1, h: y2 - y1, points: nums.subarray(1) };
}

/** Why a ring `x1 y1 x2 y2 ...` encloses nothing (fewer than 3 distinct points, or collinear), or null. */
function polygonDegeneracy(points: Float64Array): string | null {
  const distinct = new Set<string>();
  for (let k = 0; k < points.length; k += 2) distinct.add(`${points[k]},${points[k + 1]}`);
  if (distinct.size < 3) return `a polygon needs at least 3 distinct points, got ${distinct.size}`;
  let twice = 0;
  const n = points.length / 2;
  for (let k = 0; k < n; k++) {
    const j = (k + 1) % n;
    twice += points[2 * k]! * points[2 * j + 1]! - points[2 * j]! * points[2 * k + 1]!;
  }
  return twice === 0 ? 'the polygon has zero area (its points are collinear)' : null;
}

/** The non-blank rows of a label file's text with their 1-based line numbers. */
export function* labelFileLines(text: string): Generator<{ lineNo: number; line: string }> {
  const lines = text.split(/\r?\n/);
  for (let li = 0; li < lines.length; li++) {
    const line = lines[li]!.trim();
    if (line !== '') yield { lineNo: li + 1, line };
  }
}

/** Training's message for a row parseLabelLine cannot read. */
function unreadableRow(issue: LabelLineIssue, line: string): string {
  switch (issue.kind) {
    case 'fields':
      return `expected 5 values "class cx cy w h" (or a polygon "class x1 y1 x2 y2 x3 y3 ..."), got ${issue.fields}`;
    case 'shape':
      // More than 5 fields is a polygon row (as the original reads it): say what it lacks.
      return (issue.fields % 2 === 0
        ? `a polygon row needs an even number of coordinates after the class id, got ${issue.fields - 1}`
        : `a polygon needs at least 3 points (6 coordinates), got ${(issue.fields - 1) / 2} points`) +
        ' (rows are "class cx cy w h" or a polygon "class x1 y1 x2 y2 x3 y3 ...")';
    case 'class':
      return `class id must be a non-negative integer, got '${issue.token}'`;
    case 'number':
    case 'non_finite':
      return `'${issue.token}' is not a number (row: "${line}")`;
  }
}

/**
 * Parses the text of a label file. `nc` bounds class ids (pass Infinity to skip the check).
 * Blank lines are ignored; everything else must be a well-formed row.
 */
export function parseLabels(text: string, file: string, nc: number): ImageLabels {
  const out: number[] = [];
  const segments: (Float32Array | null)[] = [];
  let polygons = false;
  for (const { lineNo, line } of labelFileLines(text)) {
    const row = parseLabelLine(line);
    if (!row.ok) throw invalid(file, lineNo, unreadableRow(row.issue, line));
    const { cls, cx, cy, w, h } = row;
    if (cls < 0) throw invalid(file, lineNo, `class id must be a non-negative integer, got '${line.split(/\s+/)[0]}'`);
    if (cls >= nc) throw invalid(file, lineNo, `class id ${cls} is out of range: the dataset has nc=${nc} (ids 0..${nc - 1})`);
    const lo = -COORD_TOLERANCE, hi = 1 + COORD_TOLERANCE;
    if (row.points) {
      for (let k = 0; k < row.points.length; k += 2) {
        const x = row.points[k]!, y = row.points[k + 1]!;
        if (x < lo || y < lo || x > hi || y > hi) {
          throw invalid(file, lineNo, `polygon point (${x}, ${y}) is outside 0..1 (YOLO labels are normalised)`);
        }
      }
      const degenerate = polygonDegeneracy(row.points);
      if (degenerate) throw invalid(file, lineNo, degenerate);
    } else {
      if (w < 0 || h < 0) throw invalid(file, lineNo, `negative width or height (${w}, ${h})`);
      if (cx - w / 2 < lo || cy - h / 2 < lo || cx + w / 2 > hi || cy + h / 2 > hi) {
        const pixels = [cx, cy, w, h].some((v) => v > hi);
        throw invalid(file, lineNo, `box (cx=${cx}, cy=${cy}, w=${w}, h=${h}) extends outside the image` +
          (pixels ? '; coordinates look like pixels, but YOLO labels are normalised to 0..1' : ''));
      }
    }
    out.push(cls, cx, cy, w, h);
    segments.push(row.points ? Float32Array.from(row.points) : null);
    if (row.points) polygons = true;
  }
  return { rows: Float32Array.from(out), n: out.length / 5, ...(polygons ? { segments } : {}) };
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
