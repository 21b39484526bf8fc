import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { loadDataset, type DatasetSplit } from '../../src/data/dataset.ts';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { DEFAULT_MODEL_PATH } from '../../src/assets.ts';
import { DEMO_CLASSES } from '../../src/data/demo-scenes.ts';
import { LibreYOLO } from '../../src/load.ts';
import { Boxes, Results } from '../../src/predict/results.ts';
import { evaluatePredictions, formatMetrics, groundTruthBoxes, validate, type PredictorLike } from '../../src/val/validate.ts';

let base: string;
let yaml: string;
let split: DatasetSplit;

before(async () => {
  base = await mkdtemp(join(tmpdir(), 'ly-val-'));
  yaml = (await generateSynthDataset({ out: join(base, 'ds'), seed: 6, train: 2, val: 6, imgsz: 128, classes: ['circle', 'square', 'star'] })).yaml;
  split = await loadDataset(yaml, 'val', { log: () => undefined });
});
after(async () => { await rm(base, { recursive: true, force: true }); });

/** A stand-in model that "detects" the labelled objects, optionally dropping or shifting some. */
function oracle(s: DatasetSplit, edit: (box: number[], k: number) => number[] | null = (b) => b): PredictorLike & { calls: unknown[] } {
  const calls: unknown[] = [];
  return {
    calls,
    async predict(paths, options) {
      calls.push({ n: paths.length, options });
      return Promise.all(paths.map(async (p) => {
        const i = s.images.indexOf(p);
        const meta = await sharp(p).metadata();
        const [w, h] = [meta.width!, meta.height!];
        const rows: number[][] = [];
        groundTruthBoxes(s.labels[i]!, i, w, h, s.config.nc).forEach((g, k) => {
          const b = edit([g.x1, g.y1, g.x2, g.y2, 0.5 + 0.01 * k, g.cls], k);
          if (b) rows.push(b);
        });
        return new Results({
          boxes: new Boxes(Float32Array.from(rows.flatMap((r) => r.slice(0, 4))), Float32Array.from(rows.map((r) => r[4]!)), Float32Array.from(rows.map((r) => r[5]!))),
          names: s.config.names, orig_shape: [h, w], path: p, speed: { preprocess: 1, inference: 2, postprocess: 3 },
        });
      }));
    },
  };
}

describe('validation', () => {
  it('perfect predictions score 1 under the original key names', async () => {
    const model = oracle(split);
    const r = await validate(model, yaml, { batch: 4, iou: 0.65, chunk: 4, log: () => undefined });
    for (const k of ['metrics/precision', 'metrics/recall', 'metrics/mAP50', 'metrics/mAP50-95', 'metrics/mAP75',
      'metrics/precision(B)', 'metrics/recall(B)', 'metrics/mAP50(B)', 'metrics/mAP50-95(B)', 'metrics/mAP_small', 'metrics/mAP_medium',
      'metrics/mAP_large', 'metrics/AR1', 'metrics/AR10', 'metrics/AR100', 'metrics/AR_small', 'metrics/AR_medium', 'metrics/AR_large',
      'speed/preprocess', 'speed/inference', 'speed/postprocess']) {
      assert.equal(typeof r.metrics[k], 'number', k);
    }
    // box coordinates go through float32 in Results: IoU is 1 within rounding
    assert.ok(r.metrics['metrics/mAP50-95']! > 0.999, formatMetrics(r));
    assert.ok(r.metrics['metrics/recall']! > 0.999);
    assert.equal(r.metrics['speed/inference'], 2);
    assert.equal(r.images, 6);
    assert.equal(r.instances, split.instances);
    assert.deepEqual(model.calls.map((c) => (c as { n: number }).n), [4, 2]);
    assert.deepEqual((model.calls[0] as { options: unknown }).options, { conf: 0.001, iou: 0.65, max_det: 300, batch: 4 });
    assert.deepEqual(r.perClass.map((c) => c.name), ['circle', 'square', 'star']);
    assert.equal(r.perClass.reduce((s, c) => s + c.instances, 0), split.instances);
    assert.match(formatMetrics(r), /^images 6 {2}instances \d+ {2}mAP50 1\.0000 {2}mAP50-95 1\.0000 {2}mAP75 1\.0000 {2}AR100 1\.0000$/);
  });

  it('missing half of the objects halves recall; shifted boxes lose the strict thresholds', async () => {
    const half = await validate(oracle(split, (b, k) => (k % 2 === 0 ? b : null)), split);
    // Every kept box is a true positive, so precision is 1 and recall (at the best-F1 confidence, the
    // lowest) is found / total per class, averaged over classes: worked out here from the labels.
    const found = new Map<number, number>(), total = new Map<number, number>();
    for (let i = 0; i < split.images.length; i++) {
      const meta = await sharp(split.images[i]!).metadata();
      groundTruthBoxes(split.labels[i]!, i, meta.width!, meta.height!, split.config.nc).forEach((g, k) => {
        total.set(g.cls, (total.get(g.cls) ?? 0) + 1);
        if (k % 2 === 0) found.set(g.cls, (found.get(g.cls) ?? 0) + 1);
      });
    }
    const want = [...total].reduce((s, [c, n]) => s + (found.get(c) ?? 0) / n, 0) / total.size;
    assert.ok(want > 0.4 && want < 0.7, `the dataset drops about half (${want})`);
    assert.ok(Math.abs(half.metrics['metrics/recall']! - want) < 1e-6, `recall ${half.metrics['metrics/recall']}, worked out ${want}`);
    // COCO AP: precision is 1 at the 101 recall points up to each class's recall, 0 beyond.
    const ap = [...total].reduce((s, [c, n]) => s + (Math.floor(((found.get(c) ?? 0) / n) * 100 + 1e-9) + 1) / 101, 0) / total.size;
    assert.ok(Math.abs(half.metrics['metrics/mAP50']! - ap) < 1e-9, `mAP50 ${half.metrics['metrics/mAP50']}, worked out ${ap}`);
    const shifted = await validate(oracle(split, (b) => {
      const w = b[2]! - b[0]!;
      return [b[0]! + 0.1 * w, b[1]!, b[2]! + 0.1 * w, b[3]!, b[4]!, b[5]!];
    }), split);
    // IoU = 0.9/1.1 = 0.818: matched at 0.50..0.80 (7 of 10 thresholds)
    assert.ok(Math.abs(shifted.metrics['metrics/mAP50']! - 1) < 1e-6);
    assert.ok(Math.abs(shifted.metrics['metrics/mAP50-95']! - 0.7) < 1e-6, String(shifted.metrics['metrics/mAP50-95']));
    assert.equal(shifted.metrics['metrics/mAP75'], shifted.metrics['metrics/mAP50']);
  });

  it('clamps ground truth to the image and skips degenerate rows', () => {
    const labels = { rows: Float32Array.of(0, 0.05, 0.5, 0.2, 0.2, 1, 0.5, 0.5, 0, 0.1, 7, 0.5, 0.5, 0.1, 0.1), n: 3 };
    const g = groundTruthBoxes(labels, 0, 100, 50, 3);
    assert.equal(g.length, 1);
    assert.equal(g[0]!.x1, 0);
    assert.ok(Math.abs(g[0]!.x2 - 15) < 1e-4 && Math.abs(g[0]!.area! - 15 * 10) < 1e-3);
    assert.throws(() => evaluatePredictions(split, []), /got 0 predictions for 6 images/);
  });

  it('takes 200k ground-truth boxes on one image and 200k detections on another (no argument-spread stack overflow)', () => {
    const n = 200_000;
    const rows = new Float32Array(n * 5);
    for (let i = 0; i < n; i++) rows.set([i % 3, ((i % 400) + 0.5) / 400, ((Math.floor(i / 400) % 500) + 0.5) / 500, 1 / 400, 1 / 500], i * 5);
    const crowded = { config: split.config, labels: [{ rows, n }, { rows: new Float32Array(0), n: 0 }] };
    const empty = { boxes: { xyxy: [], conf: [], cls: [] }, orig_shape: [500, 400] as [number, number] };
    const many = {
      boxes: { xyxy: Array.from({ length: n }, (_, i) => [i % 400, 0, (i % 400) + 1, 1]), conf: Array.from({ length: n }, (_, i) => 1 - i / n), cls: Array.from({ length: n }, (_, i) => i % 3) },
      orig_shape: [500, 400] as [number, number],
    };
    const r = evaluatePredictions(crowded, [empty, many]);
    assert.equal(r.instances, n);
    assert.equal(r.images, 2);
    // Every detection lies on the image without ground truth: nothing matches.
    assert.equal(r.metrics['metrics/mAP50'], 0);
  });

  it('runs a real model through predict: the bundled model scores high on its shapes, near 0 with the classes swapped', async () => {
    const ds = await generateSynthDataset({
      out: join(base, 'shapes6'), seed: 60, train: 1, val: 8, imgsz: 160, classes: [...DEMO_CLASSES],
      minObjects: 2, maxObjects: 7, sizeRange: [0.15, 0.45],
    });
    const shapes = await loadDataset(ds.yaml, 'val', { log: () => undefined });
    // The same images with every label moved to the next class: right boxes, wrong classes.
    const swapped: DatasetSplit = {
      ...shapes,
      labels: shapes.labels.map((l) => ({ ...l, rows: l.rows.map((v, k) => (k % 5 === 0 ? (v + 1) % 6 : v)) })),
    };
    const model = await LibreYOLO(DEFAULT_MODEL_PATH, { progress: false });
    try {
      const r = await validate(model, shapes, { batch: 4 });
      const wrong = await validate(model, swapped, { batch: 4 });
      assert.equal(r.images, 8);
      assert.equal(model.imgsz[0], 160);
      // docs/default-model.md: mAP50 0.99, mAP50-95 0.92 on 400 held-out images of this distribution.
      assert.ok(r.metrics['metrics/mAP50']! > 0.9, formatMetrics(r));
      assert.ok(r.metrics['metrics/mAP50-95']! > 0.75, formatMetrics(r));
      assert.ok(wrong.metrics['metrics/mAP50']! < 0.1, formatMetrics(wrong));
      assert.ok(r.metrics['speed/inference']! > 0);
    } finally {
      await model.close();
    }
  });
});
