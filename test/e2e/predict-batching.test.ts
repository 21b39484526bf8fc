/**
 * Batching and streaming: the stacked path only when the original's five conditions hold, one image
 * at a time when a chunk's tensors differ in shape, results equal to batch=1, next-chunk decoding
 * overlapping the current forward, and a stream that never runs more than a few chunks ahead.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { LibreYOLO, SAMPLE_IMAGE, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { DEFAULT_CAPABILITIES, unregisterFamily } from '../../src/models/registry.ts';
import { chunked, stackable, useStackedPath } from '../../src/predict/batching.ts';
import { letterboxPlan } from '../../src/predict/preprocess.ts';
import { letterboxGeometry, letterboxInto } from '../../src/data/letterbox.ts';
import { setSpanRecorder, type HostSpan } from '../../src/runtime/spans.ts';
import { runCli } from '../helpers/cli.ts';
import { FIXTURE_MODEL, loadAs, registerTestFamily } from '../helpers/test-families.ts';

const CONF = 0.00016; // the random-weight fixture scores ~1.7e-4 everywhere
const OPTS = { conf: CONF, imgsz: 320 } as const;

function assertSameResults(a: Results[], b: Results[]): void {
  assert.equal(a.length, b.length);
  a.forEach((r, i) => {
    const s = b[i]!;
    assert.equal(r.path, s.path);
    assert.equal(r.length, s.length, `image ${i}: same count`);
    r.boxes.xyxyData.forEach((v, k) => assert.ok(Math.abs(v - s.boxes.xyxyData[k]!) <= 1e-3, `image ${i} box value ${k}: ${v} vs ${s.boxes.xyxyData[k]}`));
    assert.deepEqual(r.boxes.cls, s.boxes.cls);
  });
}

const batchesUsed = (m: LibreYOLOModel): number[] => [...new Set(m.engine.sessionKeys().map((k) => Number(/\|(\d+)x3x/.exec(k)?.[1])))].sort();

describe('when the stacked path is taken', () => {
  const caps = DEFAULT_CAPABILITIES;
  const base = { batch: 4, tiling: false, augment: false };
  it('needs batch > 1, no tiling, no active TTA, a family that allows it and eval mode', () => {
    assert.equal(useStackedPath(base, caps, false), true);
    assert.equal(useStackedPath({ ...base, batch: 1 }, caps, false), false);
    assert.equal(useStackedPath({ ...base, tiling: true }, caps, false), false);
    assert.equal(useStackedPath({ ...base, augment: true }, caps, false), false);
    assert.equal(useStackedPath({ ...base, augment: true }, { ...caps, TTA_ENABLED: false }, false), true, 'augment on a TTA-less family is a plain pass');
    assert.equal(useStackedPath(base, { ...caps, SUPPORTS_BATCHED_PREDICT: false }, false), false);
    assert.equal(useStackedPath(base, caps, true), false, 'train mode');
  });

  it('stacks only [1,...] plans of one shape and dtype', () => {
    const img = { data: new Uint8Array(30 * 20 * 3), width: 30, height: 20 };
    const a = letterboxPlan(img, [64, 64]);
    assert.equal(stackable([a, letterboxPlan(img, [64, 64])]), true);
    assert.equal(stackable([a, letterboxPlan(img, [64, 96])]), false);
    assert.equal(stackable([a, { ...a, dims: [2, 3, 64, 64] }]), false);
    assert.deepEqual(chunked([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
  });
});

describe('batched predict on a folder', () => {
  let dir: string;
  let folder: string;
  let model: LibreYOLOModel;
  let sequential: Results[];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ly-batch-'));
    folder = join(dir, 'images');
    // Different sizes and aspect ratios: the letterbox canvas is the same for all of them.
    mkdirSync(folder);
    for (let k = 0; k < 6; k++) await sharp(SAMPLE_IMAGE).resize(200 + 37 * k, 150 + 23 * (5 - k), { fit: 'fill' }).jpeg().toFile(join(folder, `f${k}.jpg`));
    model = await LibreYOLO(FIXTURE_MODEL(), { progress: false });
    sequential = await model.predict(folder, { ...OPTS, batch: 1 }) as Results[];
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('equals batch=1 (same counts, boxes within 1e-3 px) and really stacks chunks of 4 (+ a last chunk of 2)', async () => {
    assert.ok(sequential.every((r) => r.length > 0));
    const batched = await model.predict(folder, { ...OPTS, batch: 4 }) as Results[];
    assertSameResults(batched, sequential);
    assert.deepEqual(batchesUsed(model), [1, 2, 4]);
  });

  it('a list source batches too, in order', async () => {
    const list = sequential.map((r) => r.path!).reverse();
    const batched = await model.predict(list, { ...OPTS, batch: 3 }) as Results[];
    assertSameResults(batched, [...sequential].reverse());
  });

  it('a network in train mode runs one image per forward', async () => {
    const m = await LibreYOLO(FIXTURE_MODEL(), { progress: false });
    try {
      m.network!.training = true;
      const rs = await m.predict(folder, { ...OPTS, batch: 4 }) as Results[];
      assertSameResults(rs, sequential);
      assert.deepEqual(batchesUsed(m), [1]);
    } finally {
      await m.close();
    }
  });

  it('a family that opts out (SUPPORTS_BATCHED_PREDICT=false) runs one image per forward', async () => {
    registerTestFamily('test_nobatch', { SUPPORTS_BATCHED_PREDICT: false });
    const m = await loadAs('test_nobatch', dir);
    try {
      assert.equal(m.family.name, 'test_nobatch');
      const rs = await m.predict(folder, { ...OPTS, batch: 4 }) as Results[];
      assertSameResults(rs, sequential);
      assert.deepEqual(batchesUsed(m), [1]);
    } finally {
      await m.close();
      unregisterFamily('test_nobatch');
    }
  });

  it('a chunk whose tensors differ in shape falls back to one image at a time', async () => {
    // Aspect-preserving preprocessing: the canvas is the resized image rounded up to 32, so the
    // folder's images give different shapes and no chunk can be stacked.
    registerTestFamily('test_aspect', {}, {
      preprocess(image, [h, w]) {
        const g = letterboxGeometry(image.width, image.height, h, w);
        const size: [number, number] = [Math.ceil(g.newHeight / 32) * 32, Math.ceil(g.newWidth / 32) * 32];
        return { dims: [1, 3, ...size], dtype: 'float32', ratio: g.ratio, write: (out, offset) => { letterboxInto(image, size, out, offset); } };
      },
    });
    const m = await loadAs('test_aspect', dir);
    try {
      const one = await m.predict(folder, { ...OPTS, batch: 1 }) as Results[];
      const four = await m.predict(folder, { ...OPTS, batch: 4 }) as Results[];
      assertSameResults(four, one);
      assert.deepEqual(batchesUsed(m), [1], 'every session is batch 1');
      assert.ok(new Set(m.engine.sessionKeys()).size > 1, 'several input shapes were used');
    } finally {
      await m.close();
      unregisterFamily('test_aspect');
    }
  });

  it('decodes and letterboxes the next chunk while the current one is in the worker', async () => {
    const spans: HostSpan[] = [];
    setSpanRecorder({ record: (s) => spans.push(s) });
    try {
      await model.predict(folder, { ...OPTS, batch: 2 });
    } finally {
      setSpanRecorder(null);
    }
    const runs = spans.filter((s) => s.name === 'session.run (worker)').sort((a, b) => a.ts - b.ts);
    const letterboxes = spans.filter((s) => s.name === 'letterbox').sort((a, b) => a.ts - b.ts);
    assert.equal(runs.length, 3);
    assert.equal(letterboxes.length, 6);
    for (const name of ['decode', 'letterbox', 'forward', 'session.run (worker)', 'nms', 'results']) {
      assert.ok(spans.some((s) => s.name === name), `span ${name} is still emitted`);
    }
    // Chunk 2's letterboxing (images 2 and 3) starts before chunk 1's run has finished.
    const firstRun = runs[0]!;
    assert.ok(letterboxes[2]!.ts < firstRun.ts + firstRun.dur, 'next chunk preprocessed during the forward');
  });

  it('stream: true yields results one by one and never prepares more than the next chunks', async () => {
    // 16 images in chunks of 2: 8 chunks, so a pipeline that ran ahead would have decoded more than 3 of them.
    const many = join(dir, 'many');
    mkdirSync(many);
    for (let k = 0; k < 16; k++) await sharp(SAMPLE_IMAGE).resize(160 + 8 * k, 120, { fit: 'fill' }).jpeg().toFile(join(many, `m${String(k).padStart(2, '0')}.jpg`));
    const spans: HostSpan[] = [];
    setSpanRecorder({ record: (s) => spans.push(s) });
    const seen: string[] = [];
    const decodedAt: number[] = [];
    try {
      for await (const r of model.predict(many, { ...OPTS, batch: 2, stream: true })) {
        seen.push(basename(r.path!));
        decodedAt.push(spans.filter((s) => s.name === 'decode').length);
        // Give the pipeline time to run ahead if it would: it must still stop at the next chunks.
        await new Promise((done) => setTimeout(done, 20));
      }
    } finally {
      setSpanRecorder(null);
    }
    assert.deepEqual(seen, Array.from({ length: 16 }, (_, k) => `m${String(k).padStart(2, '0')}.jpg`));
    // When result y (chunk ceil(y/2)) is yielded, one chunk is in the worker and one being prepared:
    // at most ceil(y/2) + 2 chunks of 2 images decoded.
    decodedAt.forEach((n, i) => assert.ok(n <= Math.min(16, (Math.ceil((i + 1) / 2) + 2) * 2), `after result ${i + 1}: ${n} images decoded`));
    assert.equal(decodedAt[decodedAt.length - 1], 16);
  });

  it('CLI: libreyolo predict source=<folder> batch=4 prints one line per image', async () => {
    const run = await runCli(['predict', `model=${FIXTURE_MODEL()}`, `source=${folder}`, 'batch=4', 'imgsz=320', `conf=${CONF}`], dir);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n').filter((l) => l.startsWith('image '));
    assert.equal(lines.length, 6);
    lines.forEach((l, k) => assert.match(l, new RegExp(`^image ${k + 1}/${lines.length} .*f${k}\\.jpg: \\d+x\\d+ `)));
  });
});
