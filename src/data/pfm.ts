/**
 * A PFM (Portable Float Map) decoder: sharp/libvips has none, and the original lists `.pfm` among a
 * dataset's image suffixes because OpenCV reads it. The format is `PF` (RGB) or `Pf` (grey), a line
 * break, width, height and a scale factor as text (each ended by one whitespace byte), then float32
 * samples, rows bottom to top; a negative scale means little-endian. Samples become 8-bit as
 * OpenCV's imread makes them: divided by |scale|, rounded half to even, clamped to 0..255 (NaN
 * reads 0), so a file written from an 8-bit image reads back exactly.
 */
import { LibreYOLOError } from '../errors.ts';
import { describeLimit, raiseAdvice } from '../util/limits.ts';
import { rint } from '../util/math.ts';
import type { RgbImage } from './rgb-image.ts';

const isSpace = (c: number): boolean => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/** `PF` or `Pf` followed by whitespace, as OpenCV's signature check. */
export const isPfm = (b: Uint8Array): boolean => b.length >= 3 && b[0] === 0x50 && (b[1] === 0x46 || b[1] === 0x66) && isSpace(b[2]!);

export function decodePfm(b: Uint8Array, label: string, maxPixels: number): RgbImage {
  const bad = (why: string): LibreYOLOError => new LibreYOLOError('data_invalid',
    `Cannot read the source image: ${label}: the file is corrupt, truncated or not an image (PFM: ${why}). Re-save or re-download it, or leave it out of the source.`);
  const channels = b[1] === 0x46 ? 3 : 1;
  let at = 3;
  const token = (what: string): string => {
    const start = at;
    while (at < b.length && at - start < 64 && !isSpace(b[at]!)) at++;
    if (at >= b.length || at === start || !isSpace(b[at]!)) throw bad(`no ${what} in the header`);
    return new TextDecoder().decode(b.subarray(start, at++));
  };
  const width = Number(token('width')), height = Number(token('height')), scale = Number(token('scale factor'));
  if (!Number.isSafeInteger(width) || !Number.isSafeInteger(height) || width <= 0 || height <= 0) throw bad(`invalid size ${width}x${height}`);
  if (!Number.isFinite(scale) || scale === 0) throw bad(`invalid scale factor ${scale}`);
  if (width * height > maxPixels) {
    throw new LibreYOLOError('source_too_large',
      `Cannot read the source image: ${label}: it is ${width}x${height}, more than ${describeLimit('imagePixels', maxPixels)} pixels. ${raiseAdvice('imagePixels')}`);
  }
  const rowBytes = width * channels * 4;
  if (at + rowBytes * height > b.length) throw bad(`${b.length - at} bytes of samples, ${rowBytes * height} expected for ${width}x${height}x${channels}`);
  const v = new DataView(b.buffer, b.byteOffset + at, rowBytes * height);
  // float32 arithmetic, as OpenCV scales its float buffer.
  const little = scale < 0, inv = Math.fround(1 / Math.fround(Math.abs(scale)));
  const out = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const src = (height - 1 - y) * rowBytes; // stored bottom row first
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < 3; c++) {
        const s = Math.fround(v.getFloat32(src + (x * channels + (channels === 3 ? c : 0)) * 4, little) * inv);
        out[(y * width + x) * 3 + c] = s > 0 ? Math.min(255, rint(s)) : 0; // NaN and negatives read 0
      }
    }
  }
  return { data: out, width, height };
}
