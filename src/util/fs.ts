/** File writes that never leave a half-written file behind, and reads that never run unbounded. */
import { randomBytes } from 'node:crypto';
import { constants, statSync, type Stats } from 'node:fs';
import { link, mkdir, open, readdir, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { LibreYOLOError } from '../errors.ts';
import { describeBytes, describeLimit, raiseAdvice, type LimitName } from './limits.ts';

/** Writes `bytes` to `path` via a temp file beside it and a rename; the temp file is removed on failure. */
export async function writeFileAtomic(path: string, bytes: Uint8Array | string): Promise<void> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
  await mkdir(dir, { recursive: true });
  try {
    await writeFile(tmp, bytes);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/**
 * What stands in the way of creating `dir` as a folder: the nearest existing path at or above it
 * when that is not a folder (a regular file named like one of the folders), else null.
 */
export function fileInTheWay(dir: string): string | null {
  for (let p = resolve(dir); ; p = dirname(p)) {
    let st: Stats;
    try {
      st = statSync(p);
    } catch (e) {
      if (dirname(p) === p || !(isErrno(e, 'ENOENT') || isErrno(e, 'ENOTDIR'))) return null;
      continue;
    }
    return st.isDirectory() ? null : p;
  }
}

/**
 * Refuses an output folder that cannot be created because a file sits where one of its folders
 * should be (mkdir would fail with a bare EEXIST or ENOTDIR): `key` names the option that chose it.
 */
export function checkOutputFolder(key: string, dir: string): void {
  const blocker = fileInTheWay(dir);
  if (blocker === null) return;
  throw new LibreYOLOError('output_path_invalid',
    `${key}: cannot create the folder ${resolve(dir)}: ${blocker} is ${fileKindOf(blocker)}, not a folder. Choose another ${key}, or move that file away.`);
}

function fileKindOf(path: string): string {
  try {
    const st = statSync(path);
    return st.isFile() ? 'a file' : fileKind(st);
  } catch {
    return 'a file';
  }
}

/** What a non-regular file is, for messages: `a character device`, `a FIFO (named pipe)`, ... */
export function fileKind(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** The refusal for a path that is not a regular file (devices and pipes never end, or block). */
export function notRegularFile(path: string, kind: string, what = 'source image'): LibreYOLOError {
  return new LibreYOLOError('source_not_file', `Cannot read the ${what}: ${path}: it is ${kind}, not a regular file. Pass an image file, a folder of images, or an http(s) URL.`);
}

/**
 * Reads a whole regular file of at most `maxBytes`, refusing anything else before reading a byte:
 * devices (`/dev/zero` never ends) and pipes (a FIFO blocks until a writer comes; it is opened
 * non-blocking so the refusal is immediate). `limitName` says in the message how to raise the cap.
 */
export async function readRegularFile(path: string, maxBytes: number, limitName: LimitName, what = 'source image'): Promise<Buffer> {
  const fh = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0)).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENXIO') throw notRegularFile(path, 'a socket', what); // sockets cannot be opened
    throw err;
  });
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw notRegularFile(path, fileKind(st), what);
    if (st.size > maxBytes) {
      throw new LibreYOLOError('source_too_large',
        `Cannot read the ${what}: ${path}: it is ${describeBytes(st.size)}, over the ${describeLimit(limitName, maxBytes)} limit. ${raiseAdvice(limitName)}`);
    }
    // Read what stat reported; a file that grows meanwhile is read up to that size.
    const buf = Buffer.allocUnsafe(st.size);
    let off = 0;
    while (off < st.size) {
      const { bytesRead } = await fh.read(buf, off, st.size - off, off);
      if (bytesRead === 0) break;
      off += bytesRead;
    }
    return off === st.size ? buf : buf.subarray(0, off);
  } finally {
    await fh.close();
  }
}


/**
 * `name` made safe as one path component: separators, NUL and other control characters become `_`,
 * and `.` / `..` / an empty name become `_`, so a name from a URL or a file's metadata can never
 * point outside the folder it is joined to.
 */
export function safeFileName(name: string): string {
  // eslint-disable-next-line no-control-regex
  const s = name.replace(/[\\/\x00-\x1f\x7f]/g, '_');
  return s === '' || s === '.' || s === '..' ? '_' : s;
}

/** `path`, resolved against `root`, when it lies inside `root`; an error naming both otherwise. */
export function insideOrThrow(root: string, path: string, what: string): string {
  const full = resolve(root, path);
  const rel = relative(resolve(root), full);
  if (rel === '' || rel.split(sep)[0] === '..' || isAbsolute(rel)) {
    throw new LibreYOLOError('io_error', `Refused to write ${what} at ${full}: it is not inside ${resolve(root)}.`);
  }
  return full;
}

export const isErrno = (e: unknown, code: string): boolean => (e as NodeJS.ErrnoException)?.code === code;

/**
 * Writes `data` to `dir/<stem>.<ext>`, or `<stem>2.<ext>`, `<stem>3.<ext>`, ... when taken: an
 * existing file is never replaced. The bytes go to a hidden temp file first, which is then hard-linked
 * to the first free name (link fails on an existing name, so the claim is atomic and a reader never
 * sees a partial or empty file, even after a SIGKILL). Filesystems without hard links fall back to an
 * exclusive-create reservation and a rename. Returns the path written.
 */
/** The n-th free name's tail: '' for the first, then `2`, `3`, ...; `-2` after a stem ending in a digit (`_fp16-2`, not `_fp162`). */
function numbered(stem: string, n: number): string {
  if (n === 1) return '';
  return /\d$/.test(stem) ? `-${n}` : String(n);
}

export async function writeUnique(dir: string, stem: string, ext: string, data: Uint8Array | string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${stem}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  await writeFile(tmp, data);
  try {
    return await publishUnique(tmp, dir, stem, ext);
  } finally {
    await rm(tmp, { force: true });
  }
}

/**
 * Gives the finished file `tmp` (in `dir`) the first free name `<stem>[N].<ext>` (see `numbered`) without replacing
 * anything (hard link, else exclusive create and rename); the caller removes `tmp` afterwards.
 */
export async function publishUnique(tmp: string, dir: string, stem: string, ext: string): Promise<string> {
  for (let n = 1; ; n++) {
    const path = join(dir, `${stem}${numbered(stem, n)}${ext ? `.${ext}` : ''}`);
    try {
      await link(tmp, path);
      return path;
    } catch (e) {
      if (isErrno(e, 'EEXIST')) continue;
      if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
    }
    try {
      await (await open(path, 'wx')).close();
    } catch (e) {
      if (isErrno(e, 'EEXIST')) continue;
      throw e;
    }
    await rename(tmp, path).catch(async (e: unknown) => { await rm(path, { force: true }); throw e; });
    return path;
  }
}

/**
 * A folder written under a hidden temporary name (`.<name>.partial-<pid>-<random>` beside its final
 * place) and renamed when complete, so a killed process never leaves a half-written folder under
 * the final name. Partial folders of processes that no longer run are removed when the next starts.
 */
export interface StagedDir {
  /** Where to write now. */
  path: string;
  /** Renames the folder to `<parent>/<name>` (or `<name>_2`, ... when taken); returns the final path. */
  publish(): Promise<string>;
  /** Removes the partial folder (on failure). */
  discard(): Promise<void>;
}

const PARTIAL_DIR = /^\..+\.partial-(\d+)-[0-9a-f]+$/;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return isErrno(e, 'EPERM'); // exists, owned by someone else
  }
}

export async function stageDir(parent: string, name: string): Promise<StagedDir> {
  await mkdir(parent, { recursive: true });
  for (const entry of await readdir(parent)) {
    const m = PARTIAL_DIR.exec(entry);
    if (m && Number(m[1]) !== process.pid && !processAlive(Number(m[1]))) await rm(join(parent, entry), { recursive: true, force: true });
  }
  const path = join(parent, `.${name}.partial-${process.pid}-${randomBytes(4).toString('hex')}`);
  await mkdir(path);
  return {
    path,
    async publish() {
      for (let n = 1; ; n++) {
        const final = join(parent, n === 1 ? name : `${name}_${n}`);
        try {
          await mkdir(final); // claim the name; the rename below replaces this empty folder
        } catch (e) {
          if (isErrno(e, 'EEXIST')) continue;
          throw e;
        }
        try {
          await rename(path, final);
        } catch {
          await rmdir(final); // platforms that cannot rename onto an empty folder
          await rename(path, final);
        }
        return final;
      }
    },
    discard: () => rm(path, { recursive: true, force: true }),
  };
}
