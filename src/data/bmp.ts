/**
 * A BMP decoder for the uncompressed kinds (sharp/libvips has no BMP loader): 1/4/8-bit palettes,
 * 16-bit (5-5-5 or bit fields), 24-bit and 32-bit (BGRX or bit fields), bottom-up or top-down, with
 * any of the Windows info headers (40..124 bytes) or the OS/2 core header (12). Run-length and
 * embedded JPEG/PNG BMPs are refused with a message saying so. Every size is checked against the
 * bytes present before anything is allocated.
 */
import { LibreYOLOError } from '../errors.ts';
import { describeLimit, raiseAdvice } from '../util/limits.ts';
import type { RgbImage } from './rgb-image.ts';

export const isBmp = (b: Uint8Array): boolean => b.length >= 2 && b[0] === 0x42 && b[1] === 0x4d;

const BI_RGB = 0;
const BI_BITFIELDS = 3;
const BI_ALPHABITFIELDS = 6;
const COMPRESSION_NAMES: Record<number, string> = { 1: 'RLE8', 2: 'RLE4', 4: 'JPEG', 5: 'PNG' };

/** A channel of a bit-field pixel: shift to its lowest bit and scale to 0..255. */
function channel(mask: number): (px: number) => number {
  if (mask === 0) return () => 0;
  let shift = 0;
  while (((mask >>> shift) & 1) === 0) shift++;
  const max = mask >>> shift;
  return (px) => Math.round((((px & mask) >>> shift) * 255) / max);
}

export function decodeBmp(b: Uint8Array, label: string, maxPixels: number): RgbImage {
  const bad = (why: string): LibreYOLOError => new LibreYOLOError('data_invalid',
    `Cannot read the source image: ${label}: the file is corrupt, truncated or not an image (BMP: ${why}). Re-save or re-download it, or leave it out of the source.`);
  if (b.length < 26) throw bad('shorter than its headers');
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const dataOffset = v.getUint32(10, true);
  const headerSize = v.getUint32(14, true);
  const core = headerSize === 12;
  if (!core && (headerSize < 40 || headerSize > 124)) throw bad(`unknown header size ${headerSize}`);
  if (14 + headerSize > b.length) throw bad('truncated header');
  const width = core ? v.getUint16(18, true) : v.getInt32(18, true);
  const rawHeight = core ? v.getInt16(22, true) : v.getInt32(22, true);
  const bpp = v.getUint16(core ? 24 : 28, true);
  const compression = core ? BI_RGB : v.getUint32(30, true);
  const topDown = rawHeight < 0;
  const height = Math.abs(rawHeight);
  if (width <= 0 || height <= 0) throw bad(`invalid size ${width}x${rawHeight}`);
  if (width * height > maxPixels) {
    throw new LibreYOLOError('source_too_large',
      `Cannot read the source image: ${label}: it is ${width}x${height}, more than ${describeLimit('imagePixels', maxPixels)} pixels. ${raiseAdvice('imagePixels')}`);
  }
  if (COMPRESSION_NAMES[compression]) {
    throw new LibreYOLOError('data_invalid',
      `Cannot read the source image: ${label}: ${COMPRESSION_NAMES[compression]}-compressed BMP is not supported (uncompressed BMP is). Convert it to PNG or JPEG, or leave it out of the source.`);
  }
  const bitfields = compression === BI_BITFIELDS || compression === BI_ALPHABITFIELDS;
  if (compression !== BI_RGB && !bitfields) throw bad(`unknown compression ${compression}`);
  if (![1, 4, 8, 16, 24, 32].includes(bpp) || (bitfields && bpp !== 16 && bpp !== 32)) throw bad(`unsupported ${bpp} bits per pixel`);

  // Palette (1/4/8 bits): BGR0 entries after the header (BGR for the core header).
  let palette: Uint8Array | null = null;
  if (bpp <= 8) {
    const entry = core ? 3 : 4;
    const used = core ? 0 : v.getUint32(46, true);
    const count = used > 0 && used <= 1 << bpp ? used : 1 << bpp;
    const start = 14 + headerSize;
    if (start + count * entry > b.length) throw bad('truncated palette');
    palette = new Uint8Array((1 << bpp) * 3); // indices past the palette read black
    for (let i = 0; i < count; i++) {
      palette[i * 3] = b[start + i * entry + 2]!;
      palette[i * 3 + 1] = b[start + i * entry + 1]!;
      palette[i * 3 + 2] = b[start + i * entry]!;
    }
  }
  // Bit-field masks: in the header from V2 on, else in the 12 bytes after a 40-byte header.
  let masks: [number, number, number] | null = null;
  if (bitfields) {
    const at = headerSize >= 52 ? 54 : 14 + headerSize;
    if (at + 12 > b.length) throw bad('truncated bit-field masks');
    masks = [v.getUint32(at, true), v.getUint32(at + 4, true), v.getUint32(at + 8, true)];
  } else if (bpp === 16) masks = [0x7c00, 0x03e0, 0x001f];

  const stride = Math.ceil((width * bpp) / 32) * 4;
  if (dataOffset > b.length || stride * height > b.length - dataOffset) {
    throw bad(`pixel data truncated (${height} rows of ${stride} bytes expected after offset ${dataOffset}, ${Math.max(0, b.length - dataOffset)} bytes present)`);
  }
  const out = new Uint8Array(width * height * 3);
  const [r, g, bl] = masks ? masks.map(channel) as [(p: number) => number, (p: number) => number, (p: number) => number] : [null, null, null];
  for (let y = 0; y < height; y++) {
    const row = dataOffset + (topDown ? y : height - 1 - y) * stride;
    let o = y * width * 3;
    for (let x = 0; x < width; x++, o += 3) {
      if (palette) {
        const bit = x * bpp;
        const idx = (b[row + (bit >> 3)]! >> (8 - bpp - (bit & 7))) & ((1 << bpp) - 1);
        out[o] = palette[idx * 3]!; out[o + 1] = palette[idx * 3 + 1]!; out[o + 2] = palette[idx * 3 + 2]!;
      } else if (bpp === 24 || (bpp === 32 && !masks)) {
        const p = row + x * (bpp >> 3);
        out[o] = b[p + 2]!; out[o + 1] = b[p + 1]!; out[o + 2] = b[p]!;
      } else {
        const px = bpp === 16 ? v.getUint16(row + x * 2, true) : v.getUint32(row + x * 4, true);
        out[o] = r!(px); out[o + 1] = g!(px); out[o + 2] = bl!(px);
      }
    }
  }
  return { data: out, width, height };
}
