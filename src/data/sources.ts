/**
 * Predict sources: classifies what the user passed (file, folder, URL, bytes, raw pixels, or a list of
 * these) into an ordered list of loadable items, each carrying its label, result path and save stem.
 */

import type { Dirent, Stats } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, extname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LibreYOLOError } from '../errors.ts';
import { fileKind, notRegularFile, safeFileName } from '../util/fs.ts';
import { limit, raiseAdvice } from '../util/limits.ts';
import { appendAll } from '../util/array.ts';
import { defaultWarn } from '../util/warn.ts';
import { decodeImage, fetchBytes, fromRawPixels, isHttpUrl, isRawPixels, loadImageFile, type RawPixels } from './image.ts';
import type { RgbImage } from './rgb-image.ts';
import { isVideoFile } from '../video/sources.ts';

/** One image (file path, http(s)/file URL, encoded bytes, raw pixels) or a folder path (all images below it). */
export type ImageSource = string | URL | Uint8Array | RawPixels;

export const IMAGE_SUFFIXES: ReadonlySet<string> = new Set(['.jpg', '.jpeg', '.png', '.gif', '.webp', '.bmp', '.tiff', '.tif']);
const videoWarned = new Set<string>();
/** A video inside a list or folder (not read there: named instead of "corrupt" or skipped unsaid); a GIF there is an image, as in the original. */
const isVideo = (path: string): boolean => isVideoFile(path) && !IMAGE_SUFFIXES.has(extname(path).toLowerCase());

export interface SourceItem {
  kind: 'file' | 'url' | 'bytes' | 'pixels';
  /** file path or URL, reported as `Results.path`; null for in-memory images */
  path: string | null;
  /** how messages name this image */
  label: string;
  /** file-name stem for saved output, as resolved (`image<N>` / `inference` for in-memory images) */
  stem: string;
  /** save stem when the caller numbers in-memory images itself (`image<index>`, or `inference` for null) */
  saveStem(batchIndex: number | null): string;
  load(): Promise<RgbImage>;
}

export interface ResolvedSources {
  items: SourceItem[];
  /** true for lists and folders (the caller returns an array of results) */
  isBatch: boolean;
}

/** File-name stem of a path: last component without its last suffix. */
export function pathStem(p: string): string {
  const base = basename(p);
  const ext = extname(base);
  return ext ? base.slice(0, -ext.length) : base;
}

/**
 * Stem of a URL's path component (`https://h/a/bus.jpg?x` -> `bus`), or `inference`. Decoded
 * separators and control characters (`%2F`, `%00`) become `_`, so the stem is one safe file name.
 */
export function urlStem(url: string): string {
  let pathname: string;
  try { pathname = new URL(url).pathname; } catch { return 'inference'; }
  let last = pathname.split('/').filter(Boolean).pop() ?? '';
  try { last = decodeURIComponent(last); } catch { /* keep it encoded */ }
  const stem = pathStem(safeFileName(last));
  return stem === '_' || stem === '' ? 'inference' : stem;
}

const byPath = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * All regular image files below `dir`, recursively, sorted by full path. Symbolic links are
 * followed, but each folder is walked once and each file listed once by its real path (the first
 * path in sorted order names it), so a link loop cannot hang the listing and a link cannot list an
 * image twice. Devices, pipes and sockets are skipped; at most the `folderFiles` limit is listed.
 */
export async function listImages(dir: string, suffixes: ReadonlySet<string> = IMAGE_SUFFIXES, onVideo?: (path: string) => void): Promise<string[]> {
  const maxFiles = limit('folderFiles');
  const walkedDirs = new Set<string>();
  const found: Array<{ path: string; real: string }> = [];
  const tooMany = (): LibreYOLOError =>
    new LibreYOLOError('source_too_large', `The folder ${dir} holds more than ${maxFiles} images. Pass a smaller folder. ${raiseAdvice('folderFiles')}`);
  const walk = async (folder: string, real: string): Promise<void> => {
    if (walkedDirs.has(real)) return; // a loop back to a folder, or a second way into one
    walkedDirs.add(real);
    const entries: Dirent[] = (await readdir(folder, { withFileTypes: true })).sort((a, b) => byPath(a.name, b.name));
    for (const e of entries) {
      const full = join(folder, e.name);
      const isImage = suffixes.has(extname(e.name).toLowerCase());
      if (onVideo && e.isFile() && !isImage && isVideo(e.name)) onVideo(full);
      if (!e.isDirectory() && !e.isSymbolicLink() && !(e.isFile() && isImage)) continue;
      // The listing already says a plain file is one: no stat each (150k images, 150k stats saved).
      if (e.isFile()) {
        found.push({ path: full, real: join(real, e.name) });
        if (found.length > maxFiles) throw tooMany();
        continue;
      }
      let st: Stats;
      let target: string;
      try {
        st = await stat(full);
        target = e.isSymbolicLink() ? await realpath(full) : join(real, e.name);
      } catch { continue; } // dangling link, or removed meanwhile
      if (st.isDirectory()) await walk(full, target);
      else if (st.isFile() && isImage) {
        found.push({ path: full, real: target });
        if (found.length > maxFiles) throw tooMany();
      }
    }
  };
  await walk(dir, await realpath(dir));
  const seen = new Set<string>();
  return found.sort((a, b) => byPath(a.path, b.path)).filter((f) => !seen.has(f.real) && seen.add(f.real)).map((f) => f.path);
}

function fileItem(path: string): SourceItem {
  const stem = pathStem(path) || 'inference';
  return { kind: 'file', path, label: path, stem, saveStem: () => stem, load: () => loadImageFile(path) };
}

function urlItem(url: string): SourceItem {
  const stem = urlStem(url);
  return { kind: 'url', path: url, label: url, stem, saveStem: () => stem, load: async () => decodeImage(await fetchBytes(url), url) };
}

const memStem = (i: number | null): string => (i === null ? 'inference' : `image${i}`);

/** Expands one source; a folder yields many items. `memName` names an in-memory image. */
async function expand(src: ImageSource, memName: () => string): Promise<SourceItem[] & { folder?: true }> {
  if (src instanceof URL) src = src.href;
  if (typeof src === 'string') {
    if (isHttpUrl(src)) return [urlItem(src)];
    const p = /^file:\/\//i.test(src) ? fileURLToPath(src) : src;
    let st: Stats;
    try {
      st = await stat(p);
    } catch {
      // The original's exact text; where we looked and what to pass go in the suggestion.
      const where = isAbsolute(p) ? '' : `Nothing exists at ${resolve(p)}. `;
      throw new LibreYOLOError('source_not_found', `Source not found: ${src}`,
        { suggestion: `${where}Pass an existing image file, a folder of images, or an http(s) URL.` });
    }
    if (st.isFile()) {
      if (isVideo(p)) {
        // A video alone never gets here (predict reads it frame by frame); in a list it is refused.
        throw new LibreYOLOError('source_not_file', `${src} is a video: a list holds images; predict a video on its own (libreyolo predict ${src}) to read its frames.`);
      }
      return [fileItem(p)];
    }
    // Devices never end and pipes block: refused here, before the model loads.
    if (!st.isDirectory()) throw notRegularFile(p, fileKind(st));
    const videos: string[] = [];
    const files = await listImages(p, IMAGE_SUFFIXES, (v) => videos.push(v));
    const videoNote = videos.length
      ? `${videos.length} video file(s) in ${p} (${videos[0]}${videos.length > 1 ? ', ...' : ''}) are not read: predict reads images here, not videos`
      : '';
    if (files.length === 0) {
      throw new LibreYOLOError(
        'data_images_missing',
        `No images found in ${p} (searched recursively for ${[...IMAGE_SUFFIXES].join(' ')})${videoNote ? `; ${videoNote}` : ''}. Add images to the folder or pass another source.`,
      );
    }
    // Said once per folder and process (the CLI resolves a source twice: to count, then to predict).
    if (videoNote && !videoWarned.has(p)) {
      videoWarned.add(p);
      defaultWarn(`${videoNote}.`);
    }
    return Object.assign(files.map(fileItem), { folder: true as const });
  }
  if (src instanceof Uint8Array) {
    const name = memName();
    return [{ kind: 'bytes', path: null, label: name, stem: name, saveStem: memStem, load: () => decodeImage(src, name) }];
  }
  if (isRawPixels(src)) {
    const name = memName();
    const px = src;
    return [{ kind: 'pixels', path: null, label: name, stem: name, saveStem: memStem, load: async () => fromRawPixels(px, name) }];
  }
  throw new LibreYOLOError(
    'config_type_error',
    `Unsupported source type: ${src === null ? 'null' : typeof src}. Use a file or folder path, an http(s) URL, a Buffer/Uint8Array, raw pixels { data, width, height, channels }, or an array of these`,
  );
}

// Array.isArray does not narrow readonly arrays.
const isList = (v: ImageSource | readonly ImageSource[]): v is readonly ImageSource[] => Array.isArray(v);

/**
 * Resolves a predict source into ordered items. Paths are checked for existence here; images are only
 * decoded when an item's `load()` runs. In-memory images are named `image<N>` (N = position in the
 * list) inside a batch and `inference` alone.
 */
export async function resolveSources(source: ImageSource | readonly ImageSource[]): Promise<ResolvedSources> {
  if (isList(source)) {
    const items: SourceItem[] = [];
    const list = source;
    for (let i = 0; i < list.length; i++) {
      // The global index is the item's final position, so names stay unique after folder expansion.
      appendAll(items, await expand(list[i]!, () => `image${items.length}`));
    }
    return { items, isBatch: true };
  }
  const items = await expand(source, () => 'inference');
  return { items, isBatch: items.folder === true };
}
