import assert from 'node:assert/strict';
import { closeSync, existsSync, openSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { LibreYOLOError } from '../../src/errors.ts';
import { decodeImage, fromRawPixels, loadImage } from '../../src/data/image.ts';
import { resolveSources, urlStem } from '../../src/data/sources.ts';
import { SAMPLE_IMAGE } from '../../src/assets.ts';

let dir: string;
const W = 40, H = 30;
/** Deterministic RGB test pattern. */
const rgb = new Uint8Array(W * H * 3).map((_, i) => (i * 37 + (i >> 5)) & 255);

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ly-image-'));
  // rgb.png is shared by several tests, so it is made here: each test runs alone.
  await sharp(rgb, { raw: { width: W, height: H, channels: 3 } }).png().toFile(join(dir, 'rgb.png'));
});
after(async () => { await rm(dir, { recursive: true, force: true }); });

function rejectsWith(p: Promise<unknown>, code: string, message: RegExp): Promise<void> {
  return assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof LibreYOLOError, `expected LibreYOLOError, got ${String(e)}`);
    assert.equal(e.code, code);
    assert.match(e.message, message);
    return true;
  });
}

describe('decodeImage / loadImage', () => {
  it('decodes a lossless PNG to the exact RGB pixels', async () => {
    const p = join(dir, 'rgb.png');
    const img = await loadImage(p);
    assert.equal(img.width, W);
    assert.equal(img.height, H);
    assert.deepEqual(img.data, rgb);
    const fromBytes = await loadImage(await readFile(p));
    assert.deepEqual(fromBytes.data, rgb);
  });

  it('decodes a JPEG with the right size and close colours', async () => {
    const flat = new Uint8Array(W * H * 3);
    for (let i = 0; i < flat.length; i += 3) { flat[i] = 200; flat[i + 1] = 60; flat[i + 2] = 20; }
    const p = join(dir, 'flat.jpg');
    await sharp(flat, { raw: { width: W, height: H, channels: 3 } }).jpeg({ quality: 95 }).toFile(p);
    const img = await loadImage(p);
    assert.equal(img.data.length, W * H * 3);
    for (let i = 0; i < img.data.length; i++) assert.ok(Math.abs(img.data[i]! - flat[i]!) <= 4);
  });

  it('expands greyscale to RGB and drops alpha', async () => {
    const grey = new Uint8Array(W * H).map((_, i) => (i * 7) & 255);
    const gp = join(dir, 'grey.png');
    await sharp(grey, { raw: { width: W, height: H, channels: 1 } }).toColourspace('b-w').png().toFile(gp);
    assert.equal((await sharp(gp).metadata()).channels, 1);
    const g = await loadImage(gp);
    for (let i = 0; i < W * H; i++) {
      assert.equal(g.data[i * 3], grey[i]);
      assert.equal(g.data[i * 3 + 1], grey[i]);
      assert.equal(g.data[i * 3 + 2], grey[i]);
    }
    const rgba = new Uint8Array(W * H * 4);
    for (let i = 0; i < W * H; i++) rgba.set([rgb[i * 3]!, rgb[i * 3 + 1]!, rgb[i * 3 + 2]!, i & 255], i * 4);
    const ap = join(dir, 'rgba.png');
    await sharp(rgba, { raw: { width: W, height: H, channels: 4 } }).png().toFile(ap);
    assert.deepEqual((await loadImage(ap)).data, rgb);
  });

  it('reduces 16-bit PNGs to 8 bits', async () => {
    const p = join(dir, 'deep.png');
    await sharp(rgb, { raw: { width: W, height: H, channels: 3 } }).toColourspace('rgb16').png().toFile(p);
    assert.equal((await sharp(p).metadata()).depth, 'ushort');
    const img = await loadImage(p);
    assert.equal(img.data.length, W * H * 3);
    for (let i = 0; i < rgb.length; i++) assert.ok(Math.abs(img.data[i]! - rgb[i]!) <= 1);
  });

  it('ignores the EXIF orientation (no auto-rotation)', async () => {
    const p = join(dir, 'rotated.jpg');
    await sharp(rgb, { raw: { width: W, height: H, channels: 3 } }).jpeg().withMetadata({ orientation: 6 }).toFile(p);
    assert.equal((await sharp(p).metadata()).orientation, 6);
    const img = await loadImage(p);
    assert.deepEqual([img.width, img.height], [W, H]);
  });

  for (const fmt of ['jpeg', 'png'] as const) {
    it(`rejects a truncated ${fmt}`, async () => {
      const full = await sharp(rgb, { raw: { width: W, height: H, channels: 3 } })[fmt]().toBuffer();
      for (const frac of [0.5, 0.9]) {
        const p = join(dir, `cut-${frac}.${fmt}`);
        await writeFile(p, full.subarray(0, Math.floor(full.length * frac)));
        await rejectsWith(loadImage(p), 'data_invalid',
          new RegExp(`^Cannot read the source image: ${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: the file is corrupt, truncated or not an image`));
      }
    });
  }

  it('rejects a file that is not an image', async () => {
    const p = join(dir, 'notes.jpg');
    await writeFile(p, 'just some text, not pixels\n');
    await rejectsWith(loadImage(p), 'data_invalid', /Cannot read the source image: .*notes\.jpg: .*not an image/);
    await rejectsWith(decodeImage(new Uint8Array(0), 'empty'), 'data_invalid', /Cannot read the source image: empty:/);
  });

  it('reports a missing file', async () => {
    const p = join(dir, 'nope.jpg');
    await rejectsWith(loadImage(p), 'source_not_found', new RegExp(`^Image file not found: .*nope\\.jpg$`));
  });

  it('accepts raw pixels with 1, 3 or 4 channels and checks their size', () => {
    assert.deepEqual(fromRawPixels({ data: rgb, width: W, height: H }).data, rgb);
    const g = fromRawPixels({ data: new Uint8Array([5, 9]), width: 2, height: 1, channels: 1 });
    assert.deepEqual([...g.data], [5, 5, 5, 9, 9, 9]);
    const a = fromRawPixels({ data: new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]), width: 1, height: 2, channels: 4 });
    assert.deepEqual([...a.data], [1, 2, 3, 5, 6, 7]);
    assert.throws(() => fromRawPixels({ data: new Uint8Array(5), width: 2, height: 1 }), { code: 'data_invalid' });
    assert.throws(() => fromRawPixels({ data: new Uint8Array(6), width: 0, height: 1 }), { code: 'config_range_error' });
  });

  it('loads the bundled sample image', async () => {
    const img = await loadImage(SAMPLE_IMAGE);
    assert.deepEqual([img.width, img.height], [640, 360]);
  });
});

describe('URLs', () => {
  let server: Server;
  let base: string;
  before(async () => {
    const png = await sharp(rgb, { raw: { width: W, height: H, channels: 3 } }).png().toBuffer();
    server = createServer((req, res) => {
      if (req.url?.startsWith('/img/pic.png')) { res.writeHead(200, { 'content-type': 'image/png' }); res.end(png); }
      else if (req.url === '/text') { res.writeHead(200); res.end('hello'); }
      else { res.writeHead(404); res.end(); }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('fetches and decodes an http URL', async () => {
    const img = await loadImage(`${base}/img/pic.png?x=1`);
    assert.deepEqual(img.data, rgb);
  });

  it('reports HTTP errors and undecodable bodies', async () => {
    await rejectsWith(loadImage(`${base}/missing.jpg`), 'source_not_found',
      new RegExp(`^Failed to load image from URL '${base}/missing\\.jpg': HTTP 404`));
    await rejectsWith(loadImage(`${base}/text`), 'data_invalid', /^Cannot read the source image: http/);
  });

  it('names URL sources by their path stem', async () => {
    assert.equal(urlStem('https://example.com/a/b/bus.jpg?size=2'), 'bus');
    assert.equal(urlStem('https://example.com/'), 'inference');
    const { items, isBatch } = await resolveSources(`${base}/img/pic.png`);
    assert.equal(isBatch, false);
    assert.equal(items[0]!.stem, 'pic');
    assert.equal(items[0]!.path, `${base}/img/pic.png`);
    assert.deepEqual((await items[0]!.load()).data, rgb);
  });
});

describe('resolveSources', () => {
  it('lists a folder recursively, sorted, images only', async () => {
    const root = join(dir, 'tree');
    await mkdir(join(root, 'b', 'deep'), { recursive: true });
    await mkdir(join(root, 'a'), { recursive: true });
    const png = await sharp(rgb, { raw: { width: W, height: H, channels: 3 } }).png().toBuffer();
    for (const f of ['z.png', 'a/1.JPG', 'b/deep/x.webp', 'b/m.tif', 'readme.txt', 'b/clip.mp4']) {
      await writeFile(join(root, f), png);
    }
    const { items, isBatch } = await resolveSources(root);
    assert.equal(isBatch, true);
    assert.deepEqual(items.map((i) => i.path), ['a/1.JPG', 'b/deep/x.webp', 'b/m.tif', 'z.png'].map((f) => join(root, f)));
    assert.deepEqual(items.map((i) => i.stem), ['1', 'x', 'm', 'z']);
  });

  it('rejects an empty folder and a missing path', async () => {
    const empty = join(dir, 'empty');
    await mkdir(empty);
    await rejectsWith(resolveSources(empty), 'data_images_missing', /^No images found in .*empty/);
    await rejectsWith(resolveSources(join(dir, 'ghost.jpg')), 'source_not_found', /^Source not found: .*ghost\.jpg$/);
  });

  it('keeps list order and names in-memory items image<N>', async () => {
    const p = join(dir, 'rgb.png');
    const bytes = await readFile(p);
    const px = { data: rgb, width: W, height: H };
    const { items, isBatch } = await resolveSources([bytes, p, px]);
    assert.equal(isBatch, true);
    assert.deepEqual(items.map((i) => [i.kind, i.stem, i.path]), [['bytes', 'image0', null], ['file', 'rgb', p], ['pixels', 'image2', null]]);
    for (const it of items) assert.deepEqual((await it.load()).data, rgb);
    assert.equal(items[0]!.saveStem(7), 'image7');
    assert.equal(items[1]!.saveStem(7), 'rgb');
    const single = await resolveSources(px);
    assert.equal(single.isBatch, false);
    assert.equal(single.items[0]!.stem, 'inference');
    assert.equal((await resolveSources(p)).isBatch, false);
  });

  it('expands a list holding a folder of 150k images (no argument-spread stack overflow)', async () => {
    const n = 150_000;
    // 150k inodes on the journalled disk cost 20-50 s under load (10 s of kernel time even with
    // `touch`), which is not what this test is about: a RAM-backed tmpfs where the machine has one.
    const scratch = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'ly-image-big-'));
    try {
      const big = join(scratch, 'big');
      await mkdir(big);
      // Empty files: listing never decodes, and the folder walker only needs regular files with an image suffix.
      // Synchronous creates: on tmpfs each is a cheap syscall, and the thread-pool round trips would cost more.
      for (let i = 0; i < n; i++) closeSync(openSync(join(big, `${String(i).padStart(6, '0')}.jpg`), 'w'));
      const p = join(dir, 'rgb.png');
      const { items } = await resolveSources([p, big]);
      assert.equal(items.length, n + 1);
      assert.equal(items[n]!.path, join(big, `${String(n - 1).padStart(6, '0')}.jpg`));
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
