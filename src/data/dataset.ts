/**
 * YOLO-format datasets: the dataset YAML (`path`, `train`, `val`, `test`, `names`, `nc`, `download`),
 * name resolution (a path, `<name>.yaml`, or a bundled name such as `coco8`), the dataset root,
 * download + extraction of a zip when the data is missing, and image/label pairing per split.
 */

import { randomBytes } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { LibreYOLOError } from '../errors.ts';
import { listImages } from './sources.ts';
import { ZipArchive } from '../util/zip.ts';
import { appendAll } from '../util/array.ts';
import { mapLimit } from '../util/pool.ts';
import { COCO_NAMES } from './coco.ts';
import { labelPathFor, readLabels, type ImageLabels } from './labels.ts';

/** Image suffixes a dataset split is searched for (case-insensitive). */
export const DATASET_IMAGE_SUFFIXES: ReadonlySet<string> = new Set(['.jpg', '.jpeg', '.png', '.bmp', '.gif', '.tif', '.tiff', '.webp', '.pfm']);

export type SplitName = 'train' | 'val' | 'test';

const SPLIT_NAMES: readonly string[] = ['train', 'val', 'test'];

/** Refuses a split name other than train, val or test: checked before anything is read or downloaded. */
export function checkSplitName(split: unknown): asserts split is SplitName {
  if (typeof split !== 'string' || !SPLIT_NAMES.includes(split)) {
    throw new LibreYOLOError('config_type_error', `split must be train, val or test, got ${JSON.stringify(split) ?? String(split)}`);
  }
}

/** Dataset YAMLs the original bundles (detection sets whose download is a plain zip). */
export const BUILTIN_DATASETS: Readonly<Record<string, string>> = {
  coco8: `# COCO8: the first 4 train and 4 val images of COCO train2017 (a smoke-test set)
path: coco8
train: images/train
val: images/val
download: https://huggingface.co/datasets/LibreYOLO/coco8/resolve/main/coco8.zip
`,
  coco128: `# COCO128: the first 128 images of COCO train2017, used for both train and val
path: coco128
train: images/train2017
val: images/train2017
download: https://huggingface.co/datasets/LibreYOLO/coco128/resolve/main/coco128.zip
`,
};

export interface DatasetConfig {
  /** The YAML file, or null for a bundled dataset. */
  yamlFile: string | null;
  /** Bundled name (`coco8`), or the YAML's stem. */
  name: string;
  builtin: boolean;
  /** Absolute dataset root. */
  root: string;
  /** Split entries resolved to absolute paths (directories or `.txt` lists). */
  splits: Partial<Record<SplitName, string[]>>;
  names: Record<number, string>;
  nc: number;
  /** http(s) URL of a zip, when the YAML has one. */
  download: string | null;
  /** The parsed YAML, for keys this module does not interpret. */
  raw: Record<string, unknown>;
}

export interface DatasetOptions {
  /** Directory relative names are resolved against (default process.cwd()). */
  cwd?: string;
  /** Environment for LIBREYOLO_DATASETS_DIR and HF_HUB_OFFLINE (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Download a missing dataset that has a `download` URL (default true). */
  allowDownload?: boolean;
  /** Progress / warning messages (default: stderr). */
  log?: (message: string) => void;
  /** Abort the download when no response headers arrive within this time (default 30 s). */
  connectTimeoutMs?: number;
  /** Label files with no image: an error (default) or ignored. */
  orphanLabels?: 'error' | 'ignore';
}

const defaultLog = (m: string): void => { process.stderr.write(`${m}\n`); };

/** `$LIBREYOLO_DATASETS_DIR`, else `~/datasets`. */
export function datasetsDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.LIBREYOLO_DATASETS_DIR ? resolve(env.LIBREYOLO_DATASETS_DIR) : join(homedir(), 'datasets');
}

async function statOrNull(p: string): Promise<Awaited<ReturnType<typeof stat>> | null> {
  try { return await stat(p); } catch { return null; }
}

const isFile = async (p: string): Promise<boolean> => (await statOrNull(p))?.isFile() ?? false;
const isDir = async (p: string): Promise<boolean> => (await statOrNull(p))?.isDirectory() ?? false;

/**
 * Finds the YAML for `data`: the path as given (relative to cwd), then with `.yaml` added, then a
 * bundled dataset of that name. Returns the file (null for bundled) and its text.
 */
export async function resolveDatasetYaml(data: string, options: DatasetOptions = {}): Promise<{ file: string | null; name: string; text: string }> {
  const cwd = options.cwd ?? process.cwd();
  const given = data.trim();
  if (given === '') throw new LibreYOLOError('config_required_key', 'data is required: a dataset YAML path or a bundled name such as coco8');
  const candidates = [resolve(cwd, given)];
  if (!/\.ya?ml$/i.test(given)) candidates.push(resolve(cwd, `${given}.yaml`));
  for (const c of candidates) {
    if (await isFile(c)) {
      const stem = basename(c).replace(/\.ya?ml$/i, '');
      return { file: c, name: stem === 'data' ? basename(dirname(c)) : stem, text: await readFile(c, 'utf8') };
    }
    if (await isDir(c) && c === candidates[0]) {
      const inner = join(c, 'data.yaml');
      if (await isFile(inner)) return { file: inner, name: basename(c), text: await readFile(inner, 'utf8') };
    }
  }
  const key = basename(given).replace(/\.ya?ml$/i, '').toLowerCase();
  const text = BUILTIN_DATASETS[key];
  if (text !== undefined) return { file: null, name: key, text };
  throw new LibreYOLOError('data_not_found',
    `Dataset not found: '${data}'. It is not a YAML file (looked for ${candidates.join(' and ')}) and not a bundled dataset (${Object.keys(BUILTIN_DATASETS).join(', ')}).`,
    { suggestion: 'Pass a dataset YAML path, a bundled name such as coco8, or create a synthetic dataset: libreyolo data synth --out datasets/synth' });
}

function parseNames(raw: Record<string, unknown>, where: string): Record<number, string> {
  const names = raw.names;
  const out: Record<number, string> = {};
  if (Array.isArray(names)) {
    names.forEach((n, i) => { out[i] = String(n); });
  } else if (names && typeof names === 'object') {
    for (const [k, v] of Object.entries(names as Record<string, unknown>)) {
      const i = Number(k);
      if (!Number.isInteger(i) || i < 0) throw new LibreYOLOError('data_invalid', `${where}: names keys must be non-negative integers, got '${k}'`);
      out[i] = String(v);
    }
    const n = Object.keys(out).length;
    for (let i = 0; i < n; i++) {
      if (!(i in out)) throw new LibreYOLOError('data_invalid', `${where}: names must cover class ids 0..${n - 1} without gaps; ${i} is missing`);
    }
  } else if (names === undefined && typeof raw.nc === 'number') {
    for (let i = 0; i < raw.nc; i++) out[i] = `class${i}`;
  } else {
    throw new LibreYOLOError('data_invalid', `${where}: 'names' is required (a list of class names or a {id: name} mapping)`);
  }
  return out;
}

/** A dataset YAML found and parsed to a mapping, nothing interpreted yet. */
export interface DatasetYaml {
  file: string | null;
  name: string;
  /** The YAML's file, or `bundled dataset '<name>'`, for messages. */
  where: string;
  raw: Record<string, unknown>;
}

/** Finds the YAML for `data` (see resolveDatasetYaml) and parses it; not a mapping is data_invalid. */
export async function readDatasetYaml(data: string, options: DatasetOptions = {}): Promise<DatasetYaml> {
  const found = await resolveDatasetYaml(data, options);
  const where = found.file ?? `bundled dataset '${found.name}'`;
  let raw: unknown;
  try {
    raw = parseYaml(found.text);
  } catch (err) {
    throw new LibreYOLOError('data_invalid', `${where}: not valid YAML (${(err as Error).message.split('\n')[0]})`, { cause: err });
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new LibreYOLOError('data_invalid', `${where}: expected a YAML mapping with train/val/names keys`);
  return { file: found.file, name: found.name, where, raw: raw as Record<string, unknown> };
}

/**
 * Where a dataset's files are: the root (`path` absolute as is; relative under the datasets dir
 * first, then beside the YAML; none -> the YAML's folder), each split's entries as absolute paths
 * (a split whose value is not a path or a list of paths is data_invalid) and the download URL.
 */
export async function resolveDatasetLayout(yaml: DatasetYaml, env: NodeJS.ProcessEnv = process.env): Promise<Pick<DatasetConfig, 'root' | 'splits' | 'download'>> {
  const { raw: cfg, where } = yaml;
  const yamlDir = yaml.file ? dirname(yaml.file) : null;
  let root: string;
  const p = cfg.path;
  if (p === undefined || p === null || p === '') {
    root = yamlDir ?? join(datasetsDir(env), yaml.name);
  } else if (isAbsolute(String(p))) {
    root = String(p);
  } else {
    const underDatasets = resolve(datasetsDir(env), String(p));
    const besideYaml = yamlDir ? resolve(yamlDir, String(p)) : null;
    const hasDownload = typeof cfg.download === 'string';
    if (await isDir(underDatasets)) root = underDatasets;
    else if (besideYaml && await isDir(besideYaml)) root = besideYaml;
    else root = hasDownload || !besideYaml ? underDatasets : besideYaml;
  }
  const splits: Partial<Record<SplitName, string[]>> = {};
  for (const s of ['train', 'val', 'test'] as const) {
    const v = cfg[s];
    if (v === undefined || v === null) continue;
    const list = Array.isArray(v) ? v : [v];
    if (list.some((e) => typeof e !== 'string')) throw new LibreYOLOError('data_invalid', `${where}: '${s}' must be a path or a list of paths`);
    splits[s] = (list as string[]).map((e) => resolve(root, e));
  }
  const download = typeof cfg.download === 'string' && /^https?:\/\//i.test(cfg.download.trim()) ? cfg.download.trim() : null;
  return { root, splits, download };
}

/** Parses the YAML text and resolves the root and split paths (nothing is downloaded here). */
export async function loadDatasetConfig(data: string, options: DatasetOptions = {}): Promise<DatasetConfig> {
  const env = options.env ?? process.env;
  const found = await readDatasetYaml(data, options);
  const { where, raw: cfg } = found;
  if (found.file === null && cfg.names === undefined) cfg.names = [...COCO_NAMES];
  const names = parseNames(cfg, where);
  const nc = Object.keys(names).length;
  if (cfg.nc !== undefined && cfg.nc !== null && Number(cfg.nc) !== nc) {
    throw new LibreYOLOError('data_invalid', `${where}: nc=${String(cfg.nc)} does not match the ${nc} entries of names`);
  }
  if (nc === 0) throw new LibreYOLOError('data_invalid', `${where}: names is empty`);
  if (cfg.train === undefined && cfg.val === undefined) throw new LibreYOLOError('data_invalid', `${where}: needs a 'train' or 'val' entry`);
  const { root, splits, download } = await resolveDatasetLayout(found, env);
  return { yamlFile: found.file, name: found.name, builtin: found.file === null, root, splits, names, nc, download, raw: cfg };
}

/**
 * A dataset named by its folder alone (the original's `data_dir`): `images/train` and `images/val`
 * (when it exists) under `dir`, labels under the matching `labels/` folders, and `names` for its
 * classes (the model's: a folder has no names). A COCO-JSON folder (`annotations/`) is refused.
 */
export async function dataDirConfig(dir: string, names: Record<number, string>, options: DatasetOptions = {}): Promise<DatasetConfig> {
  const root = resolve(options.cwd ?? process.cwd(), dir);
  if (!(await isDir(root))) {
    throw new LibreYOLOError('data_not_found', `data_dir ${root} is not a folder. Pass a dataset root holding images/train and labels/train, or data=<dataset YAML>.`);
  }
  if (await isDir(join(root, 'annotations'))) {
    throw new LibreYOLOError('config_unsupported',
      `data_dir ${root} has an annotations/ folder (COCO JSON), which this package does not read. Use YOLO labels (labels/train/*.txt) or data=<dataset YAML>.`);
  }
  const nc = Object.keys(names).length;
  if (nc === 0) throw new LibreYOLOError('data_invalid', `data_dir ${root}: the model has no class names to give the dataset; pass data=<dataset YAML> with names.`);
  const splits: Partial<Record<SplitName, string[]>> = { train: [join(root, 'images', 'train')] };
  if (await isDir(join(root, 'images', 'val'))) splits.val = [join(root, 'images', 'val')];
  return { yamlFile: null, name: basename(root), builtin: false, root, splits, names: { ...names }, nc, download: null, raw: {} };
}

/** True when `train` or `val` resolves to a non-empty directory or an existing file. */
export async function datasetExists(cfg: DatasetConfig): Promise<boolean> {
  for (const s of ['train', 'val'] as const) {
    for (const e of cfg.splits[s] ?? []) {
      const st = await statOrNull(e);
      if (st?.isFile()) return true;
      if (st?.isDirectory() && (await readdir(e)).length > 0) return true;
    }
  }
  return false;
}

const truthy = (v: string | undefined): boolean => /^(1|true|yes|on)$/i.test(v ?? '');

function missingError(cfg: DatasetConfig, reason: string, env: NodeJS.ProcessEnv): LibreYOLOError {
  const firstSplit = cfg.splits.train?.[0] ?? cfg.splits.val?.[0] ?? cfg.root;
  const place = cfg.download
    ? `download ${cfg.download} elsewhere and unzip it so that ${firstSplit} exists (the zip's top folder becomes ${cfg.root})`
    : `put the images under ${firstSplit} and their labels beside them under the matching labels/ folder`;
  return new LibreYOLOError('data_not_found',
    `Dataset '${cfg.name}' not found at ${cfg.root}: ${reason}.\n` +
      `To use it offline, ${place}; relative dataset paths are looked up under LIBREYOLO_DATASETS_DIR (now ${datasetsDir(env)}) first.\n` +
      'For a dataset that needs no download, generate a synthetic one: libreyolo data synth --out datasets/synth, then use data=datasets/synth/data.yaml',
    { suggestion: 'libreyolo data synth --out datasets/synth' });
}

/** Makes sure the dataset is on disk, downloading and extracting its zip when it is missing. */
export async function ensureDataset(cfg: DatasetConfig, options: DatasetOptions = {}): Promise<void> {
  if (await datasetExists(cfg)) return;
  const env = options.env ?? process.env;
  if (!cfg.download) {
    const what = (cfg.splits.train ?? cfg.splits.val ?? []).join(', ');
    const script = typeof cfg.raw.download === 'string' && cfg.raw.download.trim() !== '';
    throw missingError(cfg, `${what || 'the train/val paths'} do not exist or are empty, and the YAML has no download URL` +
      (script ? ' (its download entry is a script, which this package does not run)' : ''), env);
  }
  if (options.allowDownload === false) throw missingError(cfg, `it is not on disk and downloading is disabled, so ${cfg.download} was not fetched`, env);
  if (truthy(env.HF_HUB_OFFLINE)) {
    throw missingError(cfg, `it is not on disk and HF_HUB_OFFLINE=${env.HF_HUB_OFFLINE} forbids downloading ${cfg.download}`, env);
  }
  const log = options.log ?? defaultLog;
  log(`Dataset '${cfg.name}' not found at ${cfg.root}; downloading ${cfg.download}`);
  let zip: Uint8Array;
  try {
    zip = await fetchZip(cfg.download, options.connectTimeoutMs ?? 30_000);
  } catch (err) {
    throw Object.assign(missingError(cfg, `downloading ${cfg.download} failed (${(err as Error).message})`, env), { cause: err });
  }
  await extractZipInto(zip, cfg.root, cfg.download);
  log(`Dataset '${cfg.name}' extracted to ${cfg.root}`);
  if (!(await datasetExists(cfg))) {
    throw new LibreYOLOError('data_invalid',
      `The archive ${cfg.download} was extracted to ${cfg.root}, but ${(cfg.splits.train ?? cfg.splits.val ?? []).join(', ')} still does not exist: the zip does not have the layout the YAML describes`);
  }
}

async function fetchZip(url: string, connectTimeoutMs: number): Promise<Uint8Array> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new Error(`no response within ${connectTimeoutMs / 1000} s`)), connectTimeoutMs);
  let res: Response;
  try {
    res = await fetch(url, { redirect: 'follow', signal: ctl.signal });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const detail = e.cause?.code ?? e.cause?.message;
    throw new Error(detail ? `${e.message}: ${detail}` : e.message);
  } finally {
    clearTimeout(timer);
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`);
  }
  return new Uint8Array(await res.arrayBuffer());
}

/**
 * Extracts a zip so that its content ends up in `root`: a zip with a single top-level folder has that
 * folder become `root`; otherwise its entries go into `root`. Extraction goes through a staging
 * folder beside `root` and a rename, so an interrupted run leaves no half-filled dataset.
 */
export async function extractZipInto(zip: Uint8Array, root: string, label = 'archive'): Promise<void> {
  // Entries are inflated one at a time as they are written, within the limits of util/zip.ts.
  const archive = new ZipArchive(zip, {
    fail: (why, kind) => new LibreYOLOError('data_invalid', kind === 'not_zip' ? `${label} is not a valid zip archive (${why})` : `${label}: ${why}`),
  });
  const entries = new Map(archive.entries.map((e) => [e.name, e]));
  const names = [...entries.keys()].filter((n) => !n.startsWith('__MACOSX/') && n !== '');
  for (const n of names) {
    const parts = n.split(/[\\/]/);
    if (isAbsolute(n) || parts.includes('..')) throw new LibreYOLOError('data_invalid', `${label}: unsafe path in zip entry '${n}'`);
  }
  const tops = new Set(names.map((n) => n.split(/[\\/]/)[0]!));
  const single = tops.size === 1 && names.every((n) => /[\\/]/.test(n));
  const prefix = single ? `${[...tops][0]!}/` : '';
  const staging = `${root}.partial-${randomBytes(4).toString('hex')}`;
  await mkdir(staging, { recursive: true });
  try {
    for (const n of names) {
      const rel = n.replace(/\\/g, '/').slice(prefix.length);
      if (rel === '') continue;
      const dest = join(staging, ...rel.split('/'));
      if (n.endsWith('/')) { await mkdir(dest, { recursive: true }); continue; }
      await mkdir(dirname(dest), { recursive: true });
      await writeFile(dest, archive.read(entries.get(n)!));
    }
    if (await statOrNull(root)) await rm(root, { recursive: true, force: true });
    await mkdir(dirname(root), { recursive: true });
    await rename(staging, root);
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}

/**
 * All dataset images below `dir`, recursively, sorted by full path: the predict folder walker
 * (symbolic links followed without looping, each image once by its real path, regular files only).
 */
export function listDatasetImages(dir: string): Promise<string[]> {
  return listImages(dir, DATASET_IMAGE_SUFFIXES);
}

/**
 * The paths in `files` that are not regular files (links followed), in order. One directory listing
 * per folder answers most of them, so a list of 100k+ images costs a few syscalls per folder instead
 * of one stat each; links, and folders that cannot be listed, fall back to a stat each.
 */
async function notRegularFiles(files: readonly string[]): Promise<string[]> {
  const byDir = new Map<string, Set<string>>();
  for (const f of files) {
    const d = dirname(f);
    let names = byDir.get(d);
    if (!names) byDir.set(d, (names = new Set()));
    names.add(basename(f));
  }
  const missing = new Set<string>();
  const toStat: string[] = [];
  await mapLimit([...byDir], 8, async ([dir, names]) => {
    let listing: Map<string, Dirent> | null;
    try {
      listing = new Map((await readdir(dir, { withFileTypes: true })).map((e) => [e.name, e]));
    } catch {
      listing = null; // not listable (or not a folder): ask each path
    }
    for (const name of names) {
      const e = listing?.get(name);
      if (e?.isSymbolicLink() || listing === null) toStat.push(join(dir, name));
      else if (!e?.isFile()) missing.add(join(dir, name));
    }
  });
  const statted = await mapLimit(toStat, 32, isFile);
  toStat.forEach((f, i) => { if (!statted[i]) missing.add(f); });
  return files.filter((f) => missing.has(f));
}

/** The images a `.txt` split list names, in order: one path a line relative to the list's folder; blank and `#` lines skipped. */
export async function readImageList(list: string): Promise<string[]> {
  const base = dirname(list);
  const lines = (await readFile(list, 'utf8')).split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  return lines.map((l) => (isAbsolute(l) ? l : resolve(base, l)));
}

/** Image paths of one split entry: a folder (recursive) or a `.txt` list relative to the list's folder. */
async function entryImages(entry: string, where: string): Promise<{ images: string[]; dir: string | null }> {
  const st = await statOrNull(entry);
  if (!st) throw new LibreYOLOError('data_images_missing', `${where}: ${entry} does not exist`);
  if (st.isDirectory()) return { images: await listDatasetImages(entry), dir: entry };
  if (extname(entry).toLowerCase() === '.txt') {
    const images = await readImageList(entry);
    const missing = await notRegularFiles(images);
    if (missing.length) {
      throw new LibreYOLOError('data_images_missing',
        `${where}: ${missing.length} of the ${images.length} images listed in ${entry} do not exist, e.g. ${missing.slice(0, 3).join(', ')}`);
    }
    return { images, dir: null };
  }
  if (DATASET_IMAGE_SUFFIXES.has(extname(entry).toLowerCase())) return { images: [entry], dir: null };
  throw new LibreYOLOError('data_invalid', `${where}: ${entry} is neither an image folder nor a .txt list of images`);
}

/** One split of a dataset: images in order, their label files and parsed labels. */
export interface DatasetSplit {
  config: DatasetConfig;
  split: SplitName;
  images: string[];
  labelFiles: string[];
  labels: ImageLabels[];
  /** Total number of objects. */
  instances: number;
}

async function listTxt(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.toLowerCase().endsWith('.txt'))
    .map((e) => join(e.parentPath ?? (e as unknown as { path: string }).path, e.name));
}

/** Lists a split's images, pairs them with label files and parses every label (errors name file:line). */
export async function loadSplit(cfg: DatasetConfig, split: SplitName, options: DatasetOptions = {}): Promise<DatasetSplit> {
  const entries = cfg.splits[split];
  const where = `dataset '${cfg.name}' split '${split}'`;
  if (!entries || entries.length === 0) {
    throw new LibreYOLOError('data_invalid', `${cfg.yamlFile ?? where}: the YAML has no '${split}' entry`);
  }
  const images: string[] = [];
  const imageDirs: string[] = [];
  for (const e of entries) {
    const r = await entryImages(e, where);
    appendAll(images, r.images);
    if (r.dir) imageDirs.push(r.dir);
  }
  if (images.length === 0) {
    throw new LibreYOLOError('data_images_missing',
      `${where}: no images found in ${entries.join(', ')} (searched recursively for ${[...DATASET_IMAGE_SUFFIXES].join(' ')})`);
  }
  const labelFiles = images.map(labelPathFor);
  const owner = new Map<string, string>();
  for (let i = 0; i < images.length; i++) {
    const prev = owner.get(labelFiles[i]!);
    if (prev !== undefined && prev !== images[i]) {
      throw new LibreYOLOError('data_invalid', `${where}: images ${prev} and ${images[i]} share one label file ${labelFiles[i]}; rename one of them`);
    }
    owner.set(labelFiles[i]!, images[i]!);
  }
  if (options.orphanLabels !== 'ignore') {
    for (const d of imageDirs) {
      const probe = labelPathFor(join(d, 'x.jpg'));
      const labelDir = dirname(probe);
      if (labelDir === d || !(await isDir(labelDir))) continue;
      const orphans = (await listTxt(labelDir)).filter((t) => !owner.has(t) && relative(labelDir, t) !== 'classes.txt');
      if (orphans.length) {
        throw new LibreYOLOError('data_invalid',
          `${where}: ${orphans.length} label file(s) under ${labelDir} have no image under ${d}, e.g. ${orphans.slice(0, 3).join(', ')}` +
            ` (a label file ${['', 'labels', 'a', 'b.txt'].join(sep)} needs the image ${['', 'images', 'a', 'b.<ext>'].join(sep)})`,
          { suggestion: 'Add the missing images, delete the stray label files, or pass orphanLabels: "ignore".' });
      }
    }
  }
  // A list may name one image many times (oversampling): each label file is read and parsed once.
  const parsed = new Map<string, Promise<ImageLabels>>();
  const labels = await mapLimit(labelFiles, 32, (f) => {
    let p = parsed.get(f);
    if (!p) parsed.set(f, (p = readLabels(f, cfg.nc)));
    return p;
  });
  const instances = labels.reduce((s, l) => s + l.n, 0);
  if (instances === 0) (options.log ?? defaultLog)(`Warning: ${where}: no objects in any label file (looked for ${labelFiles[0]} and the like)`);
  return { config: cfg, split, images, labelFiles, labels, instances };
}

/** Resolves `data`, downloads it when missing (bundled or YAML `download` URL), and loads one split. */
export async function loadDataset(data: string, split: SplitName, options: DatasetOptions = {}): Promise<DatasetSplit> {
  checkSplitName(split);
  const cfg = await loadDatasetConfig(data, options);
  await ensureDataset(cfg, options);
  return loadSplit(cfg, split, options);
}
