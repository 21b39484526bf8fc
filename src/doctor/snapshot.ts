/**
 * The dataset as the checks see it, read once: the YAML as written, each split's images with their
 * label files parsed row by row (the rows training reads, through the same line parser), and the
 * field-count tally the format guard classifies. Image contents come later (scan.ts).
 */
import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { isMap, isScalar, parseDocument } from 'yaml';
import {
  DATASET_IMAGE_SUFFIXES, datasetExists, ensureDataset, listDatasetImages, readDatasetYaml, readImageList, resolveDatasetLayout,
  type DatasetConfig, type DatasetOptions, type SplitName,
} from '../data/dataset.ts';
import { labelFileLines, labelPathFor, parseLabelLine } from '../data/labels.ts';
import { LibreYOLOError } from '../errors.ts';
import { mapLimit } from '../util/pool.ts';
import type { ImageScan } from './scan.ts';

export const SPLITS: readonly SplitName[] = ['train', 'val', 'test'];

export interface LabelIssue { lineNo: number; reason: string }

export interface ImageRecord {
  path: string;
  labelPath: string;
  labelExists: boolean;
  /** `n * 5` float32: cls, cx, cy, w, h (normalised; polygons reduced to their extent). */
  boxes: Float32Array;
  n: number;
  issues: LabelIssue[];
  /** SHA-1 of the label file's bytes; null when it is missing or only whitespace. */
  labelDigest: string | null;
  /** Rows read as polygons (more than 5 fields). */
  polygonLines: number;
  /** False for an image a `.txt` list names that is not on disk. */
  imageExists: boolean;
  scan: ImageScan | null;
}

export interface SplitSnapshot { name: SplitName; records: ImageRecord[] }

/** One configured split entry (absolute) and what is there. */
export interface SplitEntry { path: string; exists: boolean; isDir: boolean; images: number }

export interface DatasetSnapshot {
  /** The YAML's absolute path (the name of a bundled dataset). */
  yaml: string;
  root: string;
  raw: Record<string, unknown>;
  /** `nc` as written (`5.0` stays `5.0`), for messages; null when it is not a number. */
  ncText: string | null;
  nc: number | null;
  names: Map<number, string>;
  entries: Partial<Record<SplitName, SplitEntry[]>>;
  /** Splits with at least one image, in train, val, test order. */
  splits: SplitSnapshot[];
  /** How many numeric label rows have each field count (the format guard's evidence). */
  fieldCounts: Map<number, number>;
  imagesScanned: boolean;
}

export function splitOf(snap: DatasetSnapshot, name: SplitName): SplitSnapshot | undefined {
  return snap.splits.find((s) => s.name === name);
}

export const isBackground = (r: ImageRecord): boolean => r.imageExists && r.n === 0;

/** `names` as the checks read it: a list, or a mapping whose integer-like keys count (others are dropped). */
function normalizeNames(raw: unknown): Map<number, string> {
  const out = new Map<number, string>();
  if (Array.isArray(raw)) raw.forEach((v, i) => out.set(i, String(v)));
  else if (raw && typeof raw === 'object') {
    for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
      if (/^\s*[+-]?\d+\s*$/.test(k)) out.set(Number(k), String(v));
    }
  }
  return out;
}

/** `nc` as the YAML spells it when it is a number (a float keeps its fraction: `5.0`). */
function ncSpelling(text: string): string | null {
  const doc = parseDocument(text);
  if (!isMap(doc.contents)) return null;
  const node = doc.get('nc', true);
  if (!isScalar(node) || typeof node.value !== 'number') return null;
  const isFloat = typeof node.source === 'string' ? /[.eE]|inf|nan/i.test(node.source) : node.minFractionDigits !== undefined;
  return isFloat && Number.isInteger(node.value) ? `${node.value}.0` : String(node.value);
}

async function statOrNull(p: string): Promise<Stats | null> {
  try { return await stat(p); } catch { return null; }
}

/** Parses one label file into a record's boxes, issues and digest; counts numeric rows by field count. */
async function readLabelFile(path: string, fieldCounts: Map<number, number>): Promise<Pick<ImageRecord, 'labelExists' | 'boxes' | 'n' | 'issues' | 'labelDigest' | 'polygonLines'>> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { labelExists: false, boxes: new Float32Array(0), n: 0, issues: [], labelDigest: null, polygonLines: 0 };
    return { labelExists: true, boxes: new Float32Array(0), n: 0, issues: [{ lineNo: 0, reason: `unreadable: ${(err as Error).message}` }], labelDigest: null, polygonLines: 0 };
  }
  const text = bytes.toString('utf8');
  const labelDigest = text.trim() === '' ? null : createHash('sha1').update(bytes).digest('hex');
  const rows: number[] = [];
  const issues: LabelIssue[] = [];
  let polygonLines = 0;
  for (const { lineNo, line } of labelFileLines(text)) {
    const row = parseLabelLine(line);
    // Rows whose numbers parse count for the guard, whatever their shape: a keypoint row is still evidence of a pose set.
    if (row.ok || row.issue.kind === 'shape') fieldCounts.set(row.fields, (fieldCounts.get(row.fields) ?? 0) + 1);
    if (!row.ok) { issues.push({ lineNo, reason: row.issue.reason }); continue; }
    if (row.polygon) polygonLines++;
    rows.push(row.cls, row.cx, row.cy, row.w, row.h);
  }
  return { labelExists: true, boxes: Float32Array.from(rows), n: rows.length / 5, issues, labelDigest, polygonLines };
}

export interface SnapshotOptions extends DatasetOptions {
  /** Fetch a missing dataset from its YAML's http(s) `download` URL (never run a script). */
  download?: boolean;
}

/** Resolves `data` (a YAML path or a bundled name, as train and val do) and reads every label file. */
export async function buildSnapshot(data: string, options: SnapshotOptions = {}): Promise<DatasetSnapshot> {
  const env = options.env ?? process.env;
  const yaml = await readDatasetYaml(data, options);
  const layout = await resolveDatasetLayout(yaml, env);
  const raw = yaml.raw;
  if (options.download) {
    const cfg: DatasetConfig = { yamlFile: yaml.file, name: yaml.name, builtin: yaml.file === null, ...layout, names: {}, nc: 0, raw };
    if (!(await datasetExists(cfg))) {
      if (layout.download) await ensureDataset(cfg, options);
      else if (typeof raw.download === 'string' && raw.download.trim() !== '') (options.log ?? ((m) => process.stderr.write(`${m}\n`)))(`Warning: the YAML's download entry is a script, which is never run; checking the dataset as it is on disk.`);
    }
  }
  const fieldCounts = new Map<number, number>();
  const entries: Partial<Record<SplitName, SplitEntry[]>> = {};
  const splits: SplitSnapshot[] = [];
  for (const name of SPLITS) {
    const list = layout.splits[name];
    if (!list) continue;
    const found: SplitEntry[] = [];
    const images: Array<{ path: string; listed: boolean }> = [];
    for (const path of list) {
      const st = await statOrNull(path);
      let mine: Array<{ path: string; listed: boolean }> = [];
      if (st?.isDirectory()) mine = (await listDatasetImages(path)).map((p) => ({ path: p, listed: false }));
      else if (st?.isFile() && extname(path).toLowerCase() === '.txt') mine = (await readImageList(path)).map((p) => ({ path: p, listed: true }));
      else if (st?.isFile() && DATASET_IMAGE_SUFFIXES.has(extname(path).toLowerCase())) mine = [{ path, listed: false }];
      found.push({ path, exists: st !== null, isDir: st?.isDirectory() ?? false, images: mine.length });
      for (const m of mine) images.push(m);
    }
    entries[name] = found;
    if (images.length === 0) continue;
    const records = await mapLimit(images, 32, async ({ path, listed }): Promise<ImageRecord> => {
      const labelPath = labelPathFor(path);
      const imageExists = listed ? (await statOrNull(path))?.isFile() ?? false : true;
      return { path, labelPath, ...(await readLabelFile(labelPath, fieldCounts)), imageExists, scan: null };
    });
    splits.push({ name, records });
  }
  const names = normalizeNames(raw.names);
  const ncText = typeof raw.nc === 'number' && yaml.file ? ncSpelling(await readFile(yaml.file, 'utf8')) ?? String(raw.nc) : typeof raw.nc === 'number' ? String(raw.nc) : null;
  let nc: number | null = null;
  if (typeof raw.nc === 'number' && Number.isFinite(raw.nc)) nc = Math.trunc(raw.nc);
  else if ((raw.nc === undefined || raw.nc === null) && names.size > 0) nc = names.size;
  return { yaml: yaml.file ?? yaml.name, root: layout.root, raw, ncText, nc, names, entries, splits, fieldCounts, imagesScanned: false };
}

/**
 * The format guard: the task a dataset looks like when it is clearly not detection, else null.
 * It fires only on consistent non-detection shapes, so a broken detection set still gets its
 * per-line syntax findings.
 */
export function suspectedTask(snap: DatasetSnapshot): string | null {
  if ('kpt_shape' in snap.raw) return 'pose (kpt_shape present in the YAML)';
  let total = 0;
  for (const c of snap.fieldCounts.values()) total += c;
  if (total === 0 || (snap.fieldCounts.get(5) ?? 0) / total >= 0.7) return null;
  let dominant = 0, dominantCount = -1, oddPolygon = 0;
  for (const [n, c] of snap.fieldCounts) {
    if (n === 5) continue;
    if (c > dominantCount) { dominant = n; dominantCount = c; }
    if (n >= 7 && n % 2 === 1) oddPolygon += c;
  }
  if (dominantCount / total > 0.5) {
    const extra = dominant - 5;
    if (extra > 0 && (extra % 3 === 0 || extra % 2 === 0)) {
      if (dominant === 9) return 'obb or segment (9-field label lines)';
      if (dominant % 2 === 1 && dominant >= 7) return 'segment (polygon label lines)';
      return 'pose (keypoint label lines)';
    }
  }
  return oddPolygon / total > 0.5 ? 'segment (polygon label lines)' : null;
}

/** Refuses a dataset the format guard takes for another task (exit 3, before any label finding). */
export function guardDetection(snap: DatasetSnapshot): void {
  const suspected = suspectedTask(snap);
  if (suspected === null) return;
  throw new LibreYOLOError('data_invalid',
    `This looks like a ${suspected} dataset. LibreDoctor currently supports YOLO detection datasets only (label lines of the form 'class cx cy w h').`,
    { suggestion: 'Support for other tasks is planned; see docs/doctor.md.' });
}

