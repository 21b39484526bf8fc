/**
 * Writers for the image formats sharp cannot write (BMP, PFM), byte by byte from their specs, so the
 * decoders under test (src/data/bmp.ts, src/data/pfm.ts) cannot share a writer's mistakes.
 */

/** A BMP writer for the test: rows of `bpp` bits, with a palette or bit-field masks as given. */
export function bmp(o: { w: number; h: number; bpp: number; topDown?: boolean; palette?: number[][]; masks?: number[]; compression?: number; pixel: (x: number, y: number) => number }): Buffer {
  const stride = Math.ceil((o.w * o.bpp) / 32) * 4;
  const pal = o.palette ? Buffer.concat(o.palette.map(([r, g, b]) => Buffer.from([b!, g!, r!, 0]))) : Buffer.alloc(0);
  const masks = o.masks ? Buffer.concat(o.masks.map((m) => { const b = Buffer.alloc(4); b.writeUInt32LE(m >>> 0); return b; })) : Buffer.alloc(0);
  const offset = 14 + 40 + masks.length + pal.length;
  const data = Buffer.alloc(stride * o.h);
  for (let y = 0; y < o.h; y++) {
    const row = (o.topDown ? y : o.h - 1 - y) * stride;
    for (let x = 0; x < o.w; x++) {
      const v = o.pixel(x, y);
      if (o.bpp < 8) {
        const bit = x * o.bpp;
        data[row + (bit >> 3)] |= v << (8 - o.bpp - (bit & 7));
      } else if (o.bpp === 8) data[row + x] = v;
      else if (o.bpp === 16) data.writeUInt16LE(v, row + x * 2);
      else if (o.bpp === 24) data.writeUIntLE(v, row + x * 3, 3);
      else data.writeUInt32LE(v >>> 0, row + x * 4);
    }
  }
  const h = Buffer.alloc(54);
  h.write('BM', 0, 'latin1');
  h.writeUInt32LE(offset + data.length, 2);
  h.writeUInt32LE(offset, 10);
  h.writeUInt32LE(40, 14);
  h.writeInt32LE(o.w, 18);
  h.writeInt32LE(o.topDown ? -o.h : o.h, 22);
  h.writeUInt16LE(1, 26);
  h.writeUInt16LE(o.bpp, 28);
  h.writeUInt32LE(o.compression ?? (o.masks ? 3 : 0), 30);
  h.writeUInt32LE(o.palette ? o.palette.length : 0, 46);
  return Buffer.concat([h, masks, pal, data]);
}

/**
 * A PFM file: `PF` (RGB) or `Pf` (grey) with `scale` in the header (negative: little-endian samples),
 * rows bottom to top. `pixel(x, y)` gives the samples of the pixel at row y from the top.
 */
export function pfm(o: { w: number; h: number; grey?: boolean; scale?: number; pixel: (x: number, y: number) => number[] }): Buffer {
  const scale = o.scale ?? -1;
  const c = o.grey ? 1 : 3;
  const data = Buffer.alloc(o.w * o.h * c * 4);
  for (let y = 0; y < o.h; y++) {
    for (let x = 0; x < o.w; x++) {
      const px = o.pixel(x, y);
      for (let k = 0; k < c; k++) {
        const at = (((o.h - 1 - y) * o.w + x) * c + k) * 4;
        if (scale < 0) data.writeFloatLE(px[k]!, at); else data.writeFloatBE(px[k]!, at);
      }
    }
  }
  return Buffer.concat([Buffer.from(`${o.grey ? 'Pf' : 'PF'}\n${o.w} ${o.h}\n${scale.toFixed(6)}\n`, 'latin1'), data]);
}
