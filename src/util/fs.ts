/** File writes that never leave a half-written file behind, and reads that never run unbounded. */
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
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
