/**
 * Every suffix the dataset and folder listings accept is a format we decode: a real file of each,
 * written by an independent writer (sharp, or the byte-level writers in helpers/image-files.ts),
 * listed by the dataset loader and decoded to the pixels it holds. PFM has its own cases (OpenCV's
 * conversion to 8 bits: divide by |scale|, round half to even, clamp).
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { DATASET_IMAGE_SUFFIXES, loadDataset } from '../../src/data/dataset.ts';
import { decodeImage, loadImageFile } from '../../src/data/image.ts';
import { IMAGE_SUFFIXES } from '../../src/data/sources.ts';
import { LibreYOLOError } from '../../src/errors.ts';
import { bmp, pfm } from '../helpers/image-files.ts';

const W = 12, H = 8;
// Four flat colours in quadrants: exact through every lossless writer, GIF's palette included.
const COLOURS = [[200, 30, 30], [30, 200, 30], [30, 30, 200], [240, 240, 240]];
const colourAt = (x: number, y: number): number[] => COLOURS[(x < W / 2 ? 0 : 1) + (y < H / 2 ? 0 : 2)]!;
const rgb = Buffer.alloc(W * H * 3);
for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) rgb.set(colourAt(x, y), (y * W + x) * 3);
const raw = () => sharp(rgb, { raw: { width: W, height: H, channels: 3 } });

/** A writer per suffix, and whether the format is lossy (JPEG). */
const WRITERS: Record<string, { write: () => Promise<Buffer>; lossy?: true }> = {
  '.jpg': { write: () => raw().jpeg({ quality: 100, chromaSubsampling: '4:4:4' }).toBuffer(), lossy: true },
  '.jpeg': { write: () => raw().jpeg({ quality: 100, chromaSubsampling: '4:4:4' }).toBuffer(), lossy: true },
  '.png': { write: () => raw().png().toBuffer() },
  '.webp': { write: () => raw().webp({ lossless: true }).toBuffer() },
  '.gif': { write: () => raw().gif({ dither: 0 }).toBuffer() },
  '.tif': { write: () => raw().tiff({ compression: 'none' }).toBuffer() },
  '.tiff': { write: () => raw().tiff({ compression: 'lzw' }).toBuffer() },
  '.bmp': { write: async () => bmp({ w: W, h: H, bpp: 24, pixel: (x, y) => { const [r, g, b] = colourAt(x, y); return (r! << 16) | (g! << 8) | b!; } }) },
  '.pfm': { write: async () => pfm({ w: W, h: H, pixel: colourAt }) },
};

let dir: string;
before(async () => { dir = await mkdtemp(join(tmpdir(), 'ly-formats-')); });
after(async () => { await rm(dir, { recursive: true, force: true }); });

function assertPixels(img: { data: Uint8Array; width: number; height: number }, name: string, tolerance = 0): void {
  assert.deepEqual([img.width, img.height], [W, H], name);
  for (let i = 0; i < rgb.length; i++) {
    assert.ok(Math.abs(img.data[i]! - rgb[i]!) <= tolerance, `${name}: sample ${i} is ${img.data[i]}, expected ${rgb[i]}`);
  }
}

describe('image suffixes', () => {
  it('every suffix the dataset and folder listings accept is written, listed and decoded to its pixels', async () => {
    const suffixes = [...new Set([...DATASET_IMAGE_SUFFIXES, ...IMAGE_SUFFIXES])];
    const root = join(dir, 'ds');
    await mkdir(join(root, 'images', 'train'), { recursive: true });
    await mkdir(join(root, 'labels', 'train'), { recursive: true });
    for (const [i, suffix] of suffixes.entries()) {
      const writer = WRITERS[suffix];
      assert.ok(writer, `${suffix} is an accepted image suffix with no writer in this test: add one, or drop the suffix if it cannot be decoded`);
      await writeFile(join(root, 'images', 'train', `img${i}${suffix}`), await writer.write());
      await writeFile(join(root, 'labels', 'train', `img${i}.txt`), '0 0.5 0.5 0.5 0.5\n');
    }
    await writeFile(join(root, 'data.yaml'), 'train: images/train\nval: images/train\nnames: [thing]\n');
    const split = await loadDataset(join(root, 'data.yaml'), 'train', { log: () => undefined });
    assert.deepEqual(split.images.map((p) => extname(p)).sort(), [...suffixes].sort());
    assert.equal(split.instances, suffixes.length);
    for (const path of split.images) {
      assertPixels(await loadImageFile(path), path, WRITERS[extname(path)]!.lossy ? 8 : 0);
    }
  });
});

describe('PFM', () => {
  it('converts as OpenCV does: divided by |scale|, rounded half to even, clamped; rows bottom to top; both byte orders; grey replicated', async () => {
    const samples = [0.5, 1.5, 2.5, 254.5, 300, -4, Number.NaN, 127.49];
    const expected = [0, 2, 2, 254, 255, 0, 0, 127];
    const w = samples.length, h = 2;
    // Row 0 (top) holds the samples, row 1 their halves: the orientation shows.
    const px = (x: number, y: number): number[] => { const v = y === 0 ? samples[x]! : 10 * x; return [v, v + 1, v + 2]; };
    for (const scale of [-1, 1]) {
      const img = await decodeImage(pfm({ w, h, scale, pixel: px }), `s${scale}.pfm`);
      assert.deepEqual([img.width, img.height], [w, h]);
      for (let x = 0; x < w; x++) {
        const [, g, b] = px(x, 0);
        assert.deepEqual([...img.data.subarray(x * 3, x * 3 + 3)], [expected[x]!, to8(g!), to8(b!)], `scale ${scale}, top row, x=${x}`);
        assert.deepEqual([...img.data.subarray((w + x) * 3, (w + x) * 3 + 3)], [10 * x, 10 * x + 1, 10 * x + 2], `scale ${scale}, bottom row, x=${x}`);
      }
    }
    const halved = await decodeImage(pfm({ w: 2, h: 1, scale: -2, pixel: (x) => [100 * (x + 1), 3, 5] }), 'half.pfm');
    assert.deepEqual([...halved.data], [50, 2, 2, 100, 2, 2]);
    const grey = await decodeImage(pfm({ w: 2, h: 1, grey: true, pixel: (x) => [x ? 7 : 200] }), 'grey.pfm');
    assert.deepEqual([...grey.data], [200, 200, 200, 7, 7, 7]);
  });

  it('refuses truncated samples, a bad header and an image over the pixel limit, naming the file', async () => {
    const good = pfm({ w: 4, h: 3, pixel: () => [1, 2, 3] });
    const isInvalid = (re: RegExp) => (e: unknown) => e instanceof LibreYOLOError && e.code === 'data_invalid' && re.test(e.message);
    await assert.rejects(decodeImage(good.subarray(0, good.length - 1), 'cut.pfm'),
      isInvalid(/^Cannot read the source image: cut\.pfm: the file is corrupt, truncated or not an image \(PFM: 143 bytes of samples, 144 expected for 4x3x3\)/));
    await assert.rejects(decodeImage(Buffer.from('PF\n4 x\n-1\n'), 'hdr.pfm'), isInvalid(/hdr\.pfm: .*\(PFM: invalid size 4xNaN\)/));
    await assert.rejects(decodeImage(Buffer.from('PF\n4 3\n0\n'), 'zero.pfm'), isInvalid(/zero\.pfm: .*\(PFM: invalid scale factor 0\)/));
    await assert.rejects(decodeImage(Buffer.from('PF\n4'), 'short.pfm'), isInvalid(/short\.pfm: .*\(PFM: no width in the header\)/));
    await assert.rejects(decodeImage(Buffer.from('PF\n100000 100000\n-1\n'), 'huge.pfm'),
      (e: unknown) => e instanceof LibreYOLOError && e.code === 'source_too_large' && /huge\.pfm: it is 100000x100000, more than .* pixels/.test(e.message));
  });
});

/** OpenCV's float -> 8-bit sample, written out independently of src/: NaN 0, half to even, clamped. */
function to8(v: number): number {
  if (Number.isNaN(v)) return 0;
  const f = Math.floor(v);
  const r = v - f === 0.5 ? (f % 2 === 0 ? f : f + 1) : Math.round(v);
  return Math.max(0, Math.min(255, r));
}
