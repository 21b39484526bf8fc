/**
 * Image decoding to packed 8-bit RGB. Decoding goes through sharp without EXIF rotation (the original
 * does not auto-orient) and with `failOn: 'error'`, so truncated or corrupt files fail loudly instead
 * of coming back padded with grey.
 */

import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { LibreYOLOError } from '../errors.ts';
import { readRegularFile } from '../util/fs.ts';
import { describeBytes, describeLimit, limit, raiseAdvice } from '../util/limits.ts';
import { decodeBmp, isBmp } from './bmp.ts';
import { decodePfm, isPfm } from './pfm.ts';
import type { RgbImage } from './rgb-image.ts';

/** Already-decoded pixels, HWC; 1 (grey), 3 (RGB) or 4 (RGBA, alpha dropped) channels. */
export interface RawPixels {
  data: Uint8Array;
  width: number;
  height: number;
  channels?: 1 | 3 | 4;
}

/** Anything `loadImage` accepts: a file path, an http(s)/file URL, encoded bytes or raw pixels. */
export type ImageInput = string | URL | Uint8Array | RawPixels;

export function isHttpUrl(s: string): boolean {
  return /^https?:\/\//i.test(s);
}

export function isRawPixels(v: unknown): v is RawPixels {
  return typeof v === 'object' && v !== null && !(v instanceof Uint8Array) && 'data' in v && 'width' in v && 'height' in v;
}

/** Decodes encoded image bytes (JPEG, PNG, WebP, GIF, TIFF, BMP, PFM, ...); `label` names the source in errors. */
export async function decodeImage(input: Uint8Array, label: string): Promise<RgbImage> {
  const maxPixels = limit('imagePixels');
  // sharp (libvips) has no BMP or PFM loader; small decoders of our own read them.
  if (isBmp(input)) return decodeBmp(input, label, maxPixels);
  if (isPfm(input)) return decodePfm(input, label, maxPixels);
  try {
    const { data, info } = await sharp(input, { failOn: 'error', autoOrient: false, limitInputPixels: maxPixels })
      .removeAlpha()
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`unexpected channel count ${info.channels}`);
    return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height };
  } catch (err) {
    const reason = err instanceof Error ? err.message.trim().split('\n')[0] : String(err);
    if (/pixel limit/i.test(reason)) {
      throw new LibreYOLOError('source_too_large',
        `Cannot read the source image: ${label}: it has more than ${describeLimit('imagePixels', maxPixels)} pixels. ${raiseAdvice('imagePixels')}`, { cause: err });
    }
    throw new LibreYOLOError(
      'data_invalid',
      `Cannot read the source image: ${label}: the file is corrupt, truncated or not an image (${reason}). Re-save or re-download it, or leave it out of the source.`,
      { cause: err },
    );
  }
}

/** Validates raw pixels and converts them to packed RGB (copying only when the layout differs). */
export function fromRawPixels(px: RawPixels, label = 'raw pixels'): RgbImage {
  const { data, width, height } = px;
  const channels = px.channels ?? 3;
  if (!(data instanceof Uint8Array)) {
    throw new LibreYOLOError('config_type_error', `${label}: data must be a Uint8Array of 8-bit samples`);
  }
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new LibreYOLOError('config_range_error', `${label}: width and height must be positive integers, got ${width}x${height}`);
  }
  if (channels !== 1 && channels !== 3 && channels !== 4) {
    throw new LibreYOLOError('config_range_error', `${label}: channels must be 1, 3 or 4, got ${String(channels)}`);
  }
  const n = width * height;
  if (data.length !== n * channels) {
    throw new LibreYOLOError(
      'data_invalid',
      `${label}: expected ${n * channels} bytes for ${width}x${height}x${channels}, got ${data.length}`,
    );
  }
  if (channels === 3) return { data, width, height };
  const out = new Uint8Array(n * 3);
  if (channels === 1) {
    for (let i = 0, o = 0; i < n; i++, o += 3) { const v = data[i]!; out[o] = v; out[o + 1] = v; out[o + 2] = v; }
  } else {
    for (let i = 0, s = 0, o = 0; i < n; i++, s += 4, o += 3) {
      out[o] = data[s]!; out[o + 1] = data[s + 1]!; out[o + 2] = data[s + 2]!;
    }
  }
  return { data: out, width, height };
}

/**
 * Fetches a URL's body within the `urlTimeoutMs` limit (the original's 30 s) and the `urlBytes` cap: a
 * declared Content-Length over the cap is refused before the body is read, and the body is counted
 * as it streams in, after any gzip/deflate/br decoding, so neither a huge body nor a compression bomb
 * is ever held whole.
 */
export async function fetchBytes(url: string, timeoutMs = limit('urlTimeoutMs'), maxBytes = limit('urlBytes')): Promise<Uint8Array> {
  const failed = (reason: string, cause?: unknown): LibreYOLOError =>
    new LibreYOLOError('source_not_found', `Failed to load image from URL '${url}': ${reason}`, { cause });
  const tooLarge = (what: string): LibreYOLOError =>
    new LibreYOLOError('source_too_large', `Failed to load image from URL '${url}': ${what}, over the ${describeLimit('urlBytes', maxBytes)} limit. ${raiseAdvice('urlBytes')}`);
  const reasonOf = (err: unknown): string => {
    const e = err as Error & { cause?: { message?: string } };
    let reason = e?.name === 'TimeoutError' ? `timed out after ${timeoutMs / 1000} s` : (e?.message ?? String(err));
    if (e?.cause?.message) reason += ` (${e.cause.message})`;
    return reason;
  };
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
  } catch (err) {
    throw failed(reasonOf(err), err);
  }
  if (!res.ok || !res.body) {
    await res.body?.cancel().catch(() => undefined);
    throw failed(`HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`);
  }
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await res.body.cancel().catch(() => undefined);
    throw tooLarge(`the server declares ${describeBytes(declared)} (Content-Length)`);
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge(`the body is more than ${describeBytes(maxBytes)}${res.headers.get('content-encoding') ? ` once decoded (Content-Encoding: ${res.headers.get('content-encoding')})` : ''}`);
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof LibreYOLOError) throw err;
    throw failed(reasonOf(err), err);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

/**
 * Reads and decodes an image file: regular files only (devices and pipes are refused before a byte is
 * read) of at most the `imageFileBytes` limit. Errors say what the path was.
 */
export async function loadImageFile(path: string): Promise<RgbImage> {
  let bytes: Uint8Array;
  try {
    bytes = await readRegularFile(path, limit('imageFileBytes'), 'imageFileBytes');
  } catch (err) {
    if (err instanceof LibreYOLOError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new LibreYOLOError('source_not_found', `Image file not found: ${path}`, { cause: err, suggestion: 'Check the path, or pass a folder or an http(s) URL.' });
    }
    if (code === 'EISDIR') throw new LibreYOLOError('data_invalid', `Cannot read the source image: ${path}: is a directory`, { cause: err });
    throw new LibreYOLOError('io_error', `Cannot read the source image: ${path}: ${(err as Error).message}`, { cause: err });
  }
  return decodeImage(bytes, path);
}

/** Loads any single image source to packed RGB. */
export async function loadImage(source: ImageInput): Promise<RgbImage> {
  if (source instanceof URL) source = source.href;
  if (typeof source === 'string') {
    if (isHttpUrl(source)) return decodeImage(await fetchBytes(source), source);
    if (/^file:\/\//i.test(source)) return loadImageFile(fileURLToPath(source));
    return loadImageFile(source);
  }
  if (source instanceof Uint8Array) return decodeImage(source, 'bytes');
  if (isRawPixels(source)) return fromRawPixels(source);
  throw new LibreYOLOError(
    'config_type_error',
    `Unsupported image type: ${describe(source)}. Supported: file path, http(s) URL, Buffer/Uint8Array, { data, width, height, channels }`,
  );
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'object') return (v as object).constructor?.name ?? 'object';
  return typeof v;
}
