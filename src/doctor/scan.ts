/**
 * The image pass: every existing image is read once and decoded by sharp (libvips, on libuv's
 * threads, so the event loop only hashes and collects), a bounded number at a time. One read gives
 * the SHA-1 of the bytes, the size, the channel layout (as a Pillow mode name, which the messages
 * quote), the EXIF orientation, a full decode (truncation fails it) and a 9x8 greyscale thumbnail
 * for the difference hash and the flat-colour test.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import sharp, { type Metadata } from 'sharp';
import { decodeBmp, isBmp } from '../data/bmp.ts';
import { decodePfm, isPfm } from '../data/pfm.ts';
import { resizePilGreyBicubic } from '../data/pil-resize.ts';
import { limit } from '../util/limits.ts';
import { mapLimit } from '../util/pool.ts';

export interface ImageScan {
  ok: boolean;
  error?: string;
  width: number;
  height: number;
  /** Pillow's mode name for the layout: L, LA, RGB, RGBA, CMYK, P, ... */
  mode: string;
  /** EXIF orientation tag (1..8), 0 when absent. */
  orientation: number;
  sha1: string | null;
  /** 64-bit difference hash: bit = pixel(x+1) > pixel(x) over a 9x8 thumbnail, row-major, first bit highest. */
  dhash: bigint | null;
  uniform: boolean;
}

/** Channels by mode; other modes do not take part in the mixed-layout check. */
const MODE_CHANNELS: Readonly<Record<string, number>> = { '1': 1, L: 1, I: 1, 'I;16': 1, F: 1, LA: 2, P: 3, RGB: 3, YCbCr: 3, RGBA: 4, CMYK: 4 };

export const modeChannels = (mode: string): number | undefined => MODE_CHANNELS[mode];

/** Parallel decodes: the original's thread count, which keeps libvips' queue full without holding many files at once. */
export const scanConcurrency = (): number => Math.min(32, availableParallelism() + 4);

function modeOf(meta: Metadata): string {
  if (meta.space === 'cmyk') return 'CMYK';
  if (meta.isPalette) return 'P';
  switch (meta.channels) {
    case 1: return meta.bitsPerSample === 1 ? '1' : meta.depth === 'ushort' ? 'I;16' : 'L';
    case 2: return 'LA';
    case 3: return 'RGB';
    case 4: return 'RGBA';
    default: return `${meta.channels ?? 0}-channel`;
  }
}

/** A decode failure in the original's `<ExceptionType>: <message>` form, naming the file. */
function describeFailure(err: unknown, name: string): string {
  const text = (err instanceof Error ? err.message : String(err)).trim().split('\n')[0]!;
  if (/unsupported image format/i.test(text)) return `UnidentifiedImageError: cannot identify image file ${name}`;
  if (/pixel limit/i.test(text)) return `DecompressionBombError: ${name} has more than ${limit('imagePixels')} pixels`;
  if (/premature end|truncat|unexpected end|end of (file|stream|data)/i.test(text)) return `OSError: image file is truncated (${text})`;
  const pfmOrBmp = /the file is corrupt, truncated or not an image \((.*)\)/.exec(text);
  return `OSError: ${pfmOrBmp ? pfmOrBmp[1] : text}`;
}

function thumbnailStats(grey: Uint8Array, uniformRange: number): { dhash: bigint; uniform: boolean } {
  let hi = 0, lo = 0, bit = 0;
  let min = 255, max = 0;
  for (let y = 0; y < 8; y++) {
    for (let x = 0; x < 9; x++) {
      const v = grey[y * 9 + x]!;
      if (v < min) min = v;
      if (v > max) max = v;
      if (x === 8) continue;
      const b = grey[y * 9 + x + 1]! > v ? 1 : 0;
      if (bit < 32) hi = (hi | (b << (31 - bit))) >>> 0;
      else lo = (lo | (b << (63 - bit))) >>> 0;
      bit++;
    }
  }
  return { dhash: (BigInt(hi) << 32n) | BigInt(lo), uniform: max - min <= uniformRange };
}

/** Pillow's `convert('L')` of 8-bit pixels with `channels` samples each: ITU-R 601-2 luma in 16-bit fixed point (grey and grey+alpha keep their grey). */
function luma(px: Uint8Array, channels: number): Uint8Array {
  const n = px.length / channels;
  const out = new Uint8Array(n);
  if (channels < 3) for (let i = 0, s = 0; i < n; i++, s += channels) out[i] = px[s]!;
  else for (let i = 0, s = 0; i < n; i++, s += channels) out[i] = (px[s]! * 19595 + px[s + 1]! * 38470 + px[s + 2]! * 7471 + 0x8000) >>> 16;
  return out;
}

/** The 9x8 thumbnail the hash is defined on: Pillow's `convert('L').resize((9, 8))` of the decoded pixels. */
const thumbnail = (px: Uint8Array, width: number, height: number, channels: number): Uint8Array =>
  resizePilGreyBicubic(luma(px, channels), width, height, 9, 8);

/** Reads and decodes one image; never throws (a failure is the scan's `error`). */
export async function scanImage(path: string, uniformRange = 2): Promise<ImageScan> {
  const failed = (error: string, sha1: string | null = null): ImageScan =>
    ({ ok: false, error, width: 0, height: 0, mode: '', orientation: 0, sha1, dhash: null, uniform: false });
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    return failed(`unreadable: ${(err as Error).message}`);
  }
  if (bytes.length === 0) return failed('zero-byte file');
  const sha1 = createHash('sha1').update(bytes).digest('hex');
  const name = basename(path);
  const maxPixels = limit('imagePixels');
  try {
    let width: number, height: number, mode: string, orientation = 0, grey: Uint8Array;
    if (isBmp(bytes) || isPfm(bytes)) {
      // sharp has no BMP or PFM loader: our decoders give RGB, which sharp then reduces like any other image.
      const rgb = isBmp(bytes) ? decodeBmp(bytes, name, maxPixels) : decodePfm(bytes, name, maxPixels);
      ({ width, height } = rgb);
      mode = isPfm(bytes) && bytes[1] === 0x66 ? 'F' : 'RGB';
      grey = thumbnail(rgb.data, width, height, 3);
    } else {
      const img = sharp(bytes, { failOn: 'error', autoOrient: false, limitInputPixels: maxPixels });
      const meta = await img.metadata();
      width = meta.width ?? 0;
      height = meta.height ?? 0;
      mode = modeOf(meta);
      orientation = meta.orientation ?? 0;
      // A full decode (libvips on a libuv thread): truncation fails it; 8-bit sRGB or grey, alpha kept and ignored.
      const { data, info } = await img.raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
      grey = thumbnail(data, info.width, info.height, info.channels);
    }
    const { dhash, uniform } = thumbnailStats(grey, uniformRange);
    return { ok: true, width, height, mode, orientation, sha1, dhash, uniform };
  } catch (err) {
    return failed(describeFailure(err, name), sha1);
  }
}

/** Scans `paths` with a bounded pool; `onDone` is called after each image (for a progress bar). */
export async function scanImages(paths: readonly string[], uniformRange: number, onDone?: () => void): Promise<ImageScan[]> {
  return mapLimit(paths, scanConcurrency(), async (p) => {
    const s = await scanImage(p, uniformRange);
    onDone?.();
    return s;
  });
}

/** Set bits of a 32-bit integer. */
export function popcount32(w: number): number {
  let v = w - ((w >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}
