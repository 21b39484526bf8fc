import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { LibreYOLOError } from '../../src/errors.ts';
import { loadDataset } from '../../src/data/dataset.ts';
import { mixSeed, mulberry32 } from '../../src/data/augment.ts';
import { parseLabelLine } from '../../src/data/labels.ts';
import { generateSynthDataset, parseShapeClasses, sceneSvg, synthScene, SHAPE_CLASSES, type SceneOptions } from '../../src/data/synth.ts';

let base: string;
before(async () => { base = await mkdtemp(join(tmpdir(), 'ly-synth-')); });
after(async () => { await rm(base, { recursive: true, force: true }); });

async function treeHash(dir: string): Promise<string> {
  const h = createHash('sha256');
  const files = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name)).sort();
  for (const f of files) h.update(f.slice(dir.length)).update(await readFile(f));
  return h.digest('hex');
}

describe('synthetic dataset', () => {
  it('is reproducible bit for bit by seed', async () => {
    const opts = { train: 5, val: 2, imgsz: 96 };
    await generateSynthDataset({ out: join(base, 'a'), seed: 7, ...opts });
    await generateSynthDataset({ out: join(base, 'b'), seed: 7, ...opts, concurrency: 1 });
    await generateSynthDataset({ out: join(base, 'c'), seed: 8, ...opts });
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((d) => treeHash(join(base, d))));
    assert.equal(a, b);
    assert.notEqual(a, c);
  });

  it('writes a loadable YOLO dataset whose labels count every object', async () => {
    const r = await generateSynthDataset({ out: join(base, 'ds'), seed: 2, train: 8, val: 3, imgsz: 128, classes: ['circle', 'triangle'], format: 'jpg' });
    assert.deepEqual(r.names, ['circle', 'triangle']);
    const train = await loadDataset(r.yaml, 'train', { log: () => undefined });
    const val = await loadDataset(r.yaml, 'val', { log: () => undefined });
    assert.equal(train.images.length, 8);
    assert.ok(train.images[0]!.endsWith('.jpg'));
    assert.equal(train.instances + val.instances, r.objects);
    assert.deepEqual(train.config.names, { 0: 'circle', 1: 'triangle' });
    for (const l of train.labels) for (let i = 0; i < l.n; i++) assert.ok(l.rows[i * 5]! <= 1);
    const meta = await sharp(train.images[0]!).metadata();
    assert.ok(Math.max(meta.width!, meta.height!) === 128 && Math.min(meta.width!, meta.height!) >= 76);
    await assert.rejects(generateSynthDataset({ out: join(base, 'ds'), seed: 2, train: 1, val: 1 }),
      (e: unknown) => e instanceof LibreYOLOError && /already has files.*--overwrite/.test(e.message));
    await generateSynthDataset({ out: join(base, 'ds'), seed: 2, train: 1, val: 1, overwrite: true });
    assert.equal((await readdir(join(base, 'ds', 'images', 'train'))).length, 1);
  });

  it('boxes are the exact extents of the drawn shapes', async () => {
    const opts: SceneOptions = {
      imgsz: 160, nc: SHAPE_CLASSES.length, shapes: SHAPE_CLASSES, minObjects: 3, maxObjects: 6,
      sizeRange: [0.1, 0.4], small: true, square: false, empty: false,
    };
    let checked = 0;
    for (let s = 0; s < 6; s++) {
      const scene = synthScene(mulberry32(mixSeed(11, s)), opts);
      for (let k = 0; k < scene.objects.length; k++) {
        const b = scene.objects[k]!;
        // the shape alone, white on black, 4x supersampled-free: coverage > 0 marks a touched pixel
        const svg = sceneSvg(scene.width, scene.height, [`<rect width="${scene.width}" height="${scene.height}" fill="#000"/>`,
          scene.parts.shapes[k]!.replace(/fill="#[0-9a-f]{6}"/, 'fill="#fff"')]);
        const { data, info } = await sharp(Buffer.from(svg)).greyscale().raw().toBuffer({ resolveWithObject: true });
        let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
        for (let y = 0; y < info.height; y++) for (let x = 0; x < info.width; x++) {
          if (data[y * info.width + x]! > 24) { x1 = Math.min(x1, x); y1 = Math.min(y1, y); x2 = Math.max(x2, x + 1); y2 = Math.max(y2, y + 1); }
        }
        for (const [px, v] of [[x1, b.x1], [y1, b.y1], [x2, b.x2], [y2, b.y2]] as const) {
          assert.ok(Math.abs(px - v) <= 1, `${SHAPE_CLASSES[b.cls]}: pixel extent ${[x1, y1, x2, y2]} vs box ${[b.x1, b.y1, b.x2, b.y2].map((v) => v.toFixed(2))}`);
        }
        assert.ok(b.x1 >= 0 && b.y1 >= 0 && b.x2 <= scene.width && b.y2 <= scene.height);
        checked++;
      }
    }
    assert.ok(checked >= 15, `checked ${checked} shapes`);
  });

  it('draws small objects in large images when asked', async () => {
    const opts: SceneOptions = {
      imgsz: 1024, nc: 3, shapes: ['circle', 'square', 'star'], minObjects: 8, maxObjects: 8, sizeRange: [0.05, 0.2], small: true, square: true, empty: false,
    };
    let small = 0, total = 0;
    for (let s = 0; s < 5; s++) {
      for (const b of synthScene(mulberry32(mixSeed(3, s)), opts).objects) {
        total++;
        if (Math.max(b.x2 - b.x1, b.y2 - b.y1) < 32) small++;
      }
    }
    assert.ok(small >= 5 && small < total, `${small} small of ${total}`);
  });

  it('parses class lists', () => {
    assert.deepEqual(parseShapeClasses('circle, star'), ['circle', 'star']);
    assert.deepEqual(parseShapeClasses('3'), SHAPE_CLASSES.slice(0, 3));
    assert.deepEqual(parseShapeClasses(undefined), [...SHAPE_CLASSES]);
    assert.throws(() => parseShapeClasses('circle,blob'), /Unknown shape class 'blob'/);
    assert.throws(() => parseShapeClasses('circle,circle'), /duplicates/);
  });
});

describe('synthetic segment labels (--task segment)', () => {
  /** Distance from (x, y) to the nearest edge of a closed polygon (flat pairs). */
  const edgeDistance = (p: number[], x: number, y: number): number => {
    let best = Infinity;
    for (let i = 0, n = p.length / 2; i < n; i++) {
      const ax = p[2 * i]!, ay = p[2 * i + 1]!, bx = p[(2 * i + 2) % p.length]!, by = p[(2 * i + 3) % p.length]!;
      const t = Math.max(0, Math.min(1, ((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2 || 1)));
      best = Math.min(best, Math.hypot(x - ax - t * (bx - ax), y - ay - t * (by - ay)));
    }
    return best;
  };
  const inside = (p: number[], x: number, y: number): boolean => {
    let c = false;
    for (let i = 0, j = p.length / 2 - 1; i < p.length / 2; j = i++) {
      const xi = p[2 * i]!, yi = p[2 * i + 1]!, xj = p[2 * j]!, yj = p[2 * j + 1]!;
      if ((yi > y) !== (yj > y) && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) c = !c;
    }
    return c;
  };

  it('each outline is the drawn shape: one fill colour everywhere 1.5 px inside it, other colours 1.5 px outside', async () => {
    const opts: SceneOptions = { imgsz: 160, nc: 8, shapes: SHAPE_CLASSES, minObjects: 3, maxObjects: 5, sizeRange: [0.15, 0.35], small: false, square: true, empty: false, disjoint: true };
    let checked = 0;
    for (let seed = 1; seed <= 4; seed++) {
      const scene = synthScene(mulberry32(seed), opts);
      const { data, info } = await sharp(Buffer.from(scene.svg), { density: 72 }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      for (const o of scene.objects) {
        const p = o.polygon!;
        let fill: string | null = null;
        for (let y = 0; y < info.height; y++) for (let x = 0; x < info.width; x++) {
          const cx = x + 0.5, cy = y + 0.5;
          if (edgeDistance(p, cx, cy) < 1.5) continue;
          const k = 3 * (y * info.width + x);
          const rgb = `${data[k]},${data[k + 1]},${data[k + 2]}`;
          if (inside(p, cx, cy)) {
            fill ??= rgb;
            assert.equal(rgb, fill, `seed ${seed} class ${o.cls}: pixel (${x},${y}) inside the outline is not the fill`);
            checked++;
          } else if (fill !== null && x >= o.x1 && x <= o.x2 && y >= o.y1 && y <= o.y2) {
            assert.notEqual(rgb, fill, `seed ${seed} class ${o.cls}: pixel (${x},${y}) outside the outline has the fill colour`);
          }
        }
        assert.ok(fill !== null, 'the outline has an interior');
      }
      // Disjoint: no two boxes overlap, so no shape hides part of another.
      scene.objects.forEach((a, i) => scene.objects.slice(i + 1).forEach((b) => assert.ok(a.x2 < b.x1 || b.x2 < a.x1 || a.y2 < b.y1 || b.y2 < a.y1)));
    }
    assert.ok(checked > 1000, `${checked} interior pixels checked`);
  });

  it('writes polygon rows whose extents are the boxes, readable as polygons by the label parser', async () => {
    const out = await mkdtemp(join(tmpdir(), 'ly-synth-seg-'));
    try {
      const r = await generateSynthDataset({ out, train: 3, val: 1, imgsz: 128, task: 'segment', seed: 7 });
      assert.match(await readFile(r.yaml, 'utf8'), /--task segment/);
      const lines = (await readFile(join(out, 'labels/train/000000.txt'), 'utf8')).trim().split('\n');
      assert.ok(lines.length >= 1);
      for (const line of lines) {
        const row = parseLabelLine(line);
        assert.ok(row.ok && row.polygon, line);
        assert.ok(row.fields >= 7 && row.fields % 2 === 1);
      }
      await assert.rejects(generateSynthDataset({ out: join(out, 'x'), task: 'pose' as 'segment' }), /task must be detect or segment, got 'pose'/);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});
