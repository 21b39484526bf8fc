import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LibreYOLOError } from '../../src/errors.ts';
import { loadDataset, type DatasetSplit } from '../../src/data/dataset.ts';
import { loadImageFile } from '../../src/data/image.ts';
import { letterbox } from '../../src/data/letterbox.ts';
import { createLoader, type LoaderBatch, type LoaderOptions } from '../../src/data/loader.ts';
import { generateSynthDataset } from '../../src/data/synth.ts';

let base: string;
let split: DatasetSplit;

before(async () => {
  base = await mkdtemp(join(tmpdir(), 'ly-loader-'));
  const r = await generateSynthDataset({ out: join(base, 'ds'), seed: 4, train: 12, val: 2, imgsz: 96, classes: ['circle', 'square', 'star'] });
  split = await loadDataset(r.yaml, 'train', { log: () => undefined });
});
after(async () => { await rm(base, { recursive: true, force: true }); });

async function collect(options: LoaderOptions, epoch = 0, s: Pick<DatasetSplit, 'images' | 'labels'> = split): Promise<{ batches: LoaderBatch[]; hash: string }> {
  const loader = createLoader(s, options);
  const batches: LoaderBatch[] = [];
  const h = createHash('sha256');
  try {
    for await (const b of loader.epoch(epoch)) {
      batches.push(b);
      h.update(new Uint8Array((b.images.data as Float32Array).buffer)).update(new Uint8Array((b.targets.data as Float32Array).buffer));
      h.update(JSON.stringify(b.indices));
    }
  } finally {
    await loader.close();
  }
  return { batches, hash: h.digest('hex') };
}

describe('data loader', () => {
  it('is deterministic for a seed, whatever the number of workers', async () => {
    const opts = { imgsz: 64, batch: 4, seed: 9 };
    const w0 = await collect({ ...opts, workers: 0 });
    const w1 = await collect({ ...opts, workers: 1, prefetch: 1 });
    const w2 = await collect({ ...opts, workers: 2 });
    assert.equal(w0.hash, w1.hash);
    assert.equal(w0.hash, w2.hash);
    assert.notEqual((await collect({ ...opts, workers: 0 }, 1)).hash, w0.hash, 'epochs differ');
    assert.notEqual((await collect({ ...opts, workers: 0, seed: 10 })).hash, w0.hash, 'seeds differ');
    const idx = w0.batches.flatMap((b) => b.indices).sort((a, b) => a - b);
    assert.deepEqual(idx, Array.from({ length: 12 }, (_, i) => i), 'an epoch visits every image once');
  });

  it('produces TrainBatch tensors in the contract layout', async () => {
    const { batches } = await collect({ imgsz: 64, batch: 5, workers: 0, seed: 1, maxLabels: 20 });
    assert.equal(batches.length, 2, 'drop_last when the split has at least one full batch');
    for (const b of batches) {
      assert.deepEqual(b.images.dims, [5, 3, 64, 64]);
      assert.deepEqual(b.targets.dims, [5, 20, 5]);
      const img = b.images.data as Float32Array, t = b.targets.data as Float32Array;
      assert.ok(img.every((v) => v >= 0 && v <= 1));
      for (let i = 0; i < 5; i++) {
        for (let r = 0; r < 20; r++) {
          const row = Array.from(t.subarray((i * 20 + r) * 5, (i * 20 + r) * 5 + 5));
          if (r < b.counts[i]!) {
            assert.ok(row[0]! >= 0 && row[0]! < 3 && Number.isInteger(row[0]));
            assert.ok(row.slice(1).every((v) => v >= 0 && v <= 1) && row[3]! > row[1]! && row[4]! > row[2]!, String(row));
          } else {
            assert.deepEqual(row, [-1, 0, 0, 0, 0]);
          }
        }
      }
      assert.equal(b.paths.length, 5);
      assert.ok(b.origShapes.every(([h, w]) => Math.max(h, w) === 96));
    }
  });

  it('drop_last as the original: partial batches only when the split is smaller than a batch', async () => {
    const loader = createLoader(split, { imgsz: 64, batch: 5, workers: 0 });
    assert.equal(loader.length, 2);
    assert.equal(createLoader(split, { imgsz: 64, batch: 5, workers: 0, dropLast: false }).length, 3);
    const small = { images: split.images.slice(0, 3), labels: split.labels.slice(0, 3) };
    const { batches } = await collect({ imgsz: 64, batch: 5, workers: 0 }, 0, small);
    assert.equal(batches.length, 1);
    assert.deepEqual(batches[0]!.images.dims, [3, 3, 64, 64]);
    const { batches: partial } = await collect({ imgsz: 64, batch: 5, workers: 0, dropLast: false });
    assert.deepEqual(partial.map((b) => b.indices.length), [5, 5, 2]);
  });

  it('without augmentation, images are the plain letterbox and targets the labels', async () => {
    const { batches } = await collect({ imgsz: 64, batch: 3, workers: 0, augment: false, shuffle: false });
    const b = batches[0]!;
    assert.deepEqual(b.indices, [0, 1, 2]);
    const img = await loadImageFile(split.images[1]!);
    const plane = 3 * 64 * 64;
    assert.deepEqual((b.images.data as Float32Array).subarray(plane, 2 * plane), letterbox(img, 64).tensor);
    const r = 64 / Math.max(img.width, img.height);
    const l = split.labels[1]!;
    const t = b.targets.data as Float32Array;
    assert.equal(b.counts[1], l.n);
    for (let i = 0; i < l.n; i++) {
      const [c, cx, cy, w, h] = Array.from(l.rows.subarray(i * 5, i * 5 + 5)) as [number, number, number, number, number];
      const want = [c, (cx - w / 2) * img.width * r / 64, (cy - h / 2) * img.height * r / 64, (cx + w / 2) * img.width * r / 64, (cy + h / 2) * img.height * r / 64];
      const got = Array.from(t.subarray((100 + i) * 5, (100 + i) * 5 + 5));
      got.forEach((v, k) => assert.ok(Math.abs(v - want[k]!) < 1e-5, `${got} vs ${want}`));
    }
  });

  it('mosaic can be switched off between epochs (close-mosaic)', async () => {
    const loader = createLoader(split, { imgsz: 64, batch: 4, workers: 0, seed: 2 });
    const hash = async (l = loader): Promise<string> => {
      const h = createHash('sha256');
      for await (const b of l.epoch(0)) h.update(new Uint8Array((b.images.data as Float32Array).buffer));
      return h.digest('hex');
    };
    const on = await hash();
    loader.mosaic = false;
    const off = await hash();
    loader.mosaic = true;
    assert.notEqual(on, off, 'switching mosaic off changes the images');
    assert.equal(await hash(), on, 'and switching it back on restores them');
    // A loader built with mosaic: false gives exactly the switched-off epoch.
    const built = createLoader(split, { imgsz: 64, batch: 4, workers: 0, seed: 2, mosaic: false });
    try {
      assert.equal(await hash(built), off);
    } finally {
      await built.close();
    }
    await loader.close();
  });

  it('can stop an epoch early, refuses two epochs at once, and reports bad images', async () => {
    const loader = createLoader(split, { imgsz: 64, batch: 2, workers: 1, seed: 3 });
    for await (const b of loader.epoch(0)) { assert.equal(b.index, 0); break; }
    const it1 = loader.epoch(1);
    await it1.next();
    await assert.rejects(loader.epoch(2).next(), /one epoch at a time/);
    await it1.return(undefined);
    let n = 0;
    for await (const _ of loader.epoch(1)) n++;
    assert.equal(n, 6);
    await loader.close();

    const bad = join(base, 'broken.png');
    await writeFile(bad, 'not an image');
    const broken = { images: [...split.images.slice(0, 3), bad], labels: [...split.labels.slice(0, 3), { rows: new Float32Array(0), n: 0 }] };
    for (const workers of [0, 1]) {
      await assert.rejects(collect({ imgsz: 64, batch: 4, workers, augment: false }, 0, broken),
        (e: unknown) => e instanceof LibreYOLOError && e.code === 'data_invalid' && e.message.includes('broken.png'));
    }
  });
});

describe('data loader cache', () => {
  it('gives the same batches with the image cache on', async () => {
    const opts = { imgsz: 64, batch: 4, seed: 5 };
    const plain = await collect({ ...opts, workers: 0 });
    const loader = createLoader(split, { ...opts, workers: 1, cache: true });
    const hashes: string[] = [];
    for (const _ of [0, 1]) {
      const h = createHash('sha256');
      for await (const b of loader.epoch(0)) {
        h.update(new Uint8Array((b.images.data as Float32Array).buffer)).update(new Uint8Array((b.targets.data as Float32Array).buffer));
        h.update(JSON.stringify(b.indices));
      }
      hashes.push(h.digest('hex'));
    }
    await loader.close();
    assert.deepEqual(hashes, [plain.hash, plain.hash]);
  });
});
