/**
 * Mask validation (segmentation.md section 5): polygon ground truth rasterised as pycocotools does,
 * mask IoU on run lengths, the original's (B) / (M) / unsuffixed keys, top 100 detections per image,
 * box-only rows as empty masks; a hand-built case whose numbers are worked out below, and the ground
 * truth of a synthetic segment set fed back as predictions through validate().
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { ringsToRuns } from '../../src/data/masks/polygon.ts';
import { decodeRunsInto, encodeRuns, runsArea, runsIntersection } from '../../src/data/masks/rle.ts';
import { loadDataset } from '../../src/data/dataset.ts';
import { parseLabels } from '../../src/data/labels.ts';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { mulberry32 } from '../../src/util/random.ts';
import { IOU_THRESHOLDS } from '../../src/val/metrics.ts';
import { evaluatePredictions, validate, type PredictionLike } from '../../src/val/validate.ts';
import { tempDir } from '../helpers/temp.ts';

const close = (a: number | undefined, b: number, msg = ''): void => assert.ok(a !== undefined && Math.abs(a - b) < 1e-9, `${msg}: ${a} != ${b}`);

/** Runs of the pixel rectangle [x1, x2) x [y1, y2) on a w x h image, pixel by pixel. */
function rectRuns(w: number, h: number, x1: number, y1: number, x2: number, y2: number): Int32Array {
  const px = new Uint8Array(w * h);
  for (let y = y1; y < y2; y++) for (let x = x1; x < x2; x++) px[y * w + x] = 1;
  return encodeRuns(px);
}

/** A polygon label row for the rectangle [x1, x2] x [y1, y2] (pixels) on a w x h image. */
const rectRow = (cls: number, w: number, h: number, x1: number, y1: number, x2: number, y2: number): string =>
  `${cls} ${[x1 / w, y1 / h, x2 / w, y1 / h, x2 / w, y2 / h, x1 / w, y2 / h].join(' ')}`;

function prediction(w: number, h: number, dets: { box: number[]; score: number; cls?: number; runs: Int32Array }[]): PredictionLike {
  return {
    orig_shape: [h, w],
    boxes: { xyxy: dets.map((d) => d.box), conf: dets.map((d) => d.score), cls: dets.map((d) => d.cls ?? 0) },
    masks: dets.length ? { runs: dets.map((d) => d.runs) } : null,
  };
}

const split = (texts: string[], nc = 1): Parameters<typeof evaluatePredictions>[0] => ({
  labels: texts.map((t, i) => parseLabels(t, `img${i}.txt`, nc)),
  config: { nc, names: Array.from({ length: nc }, (_, c) => `c${c}`) } as unknown as Parameters<typeof evaluatePredictions>[0]['config'],
});

describe('mask pieces', () => {
  it('a rectangle polygon rasterises to its pixels [x1, x2) x [y1, y2); two rings merge by union; points are clamped to the image', () => {
    assert.deepEqual([...ringsToRuns([[2, 1, 7, 1, 7, 5, 2, 5]], 8, 10)], [...rectRuns(10, 8, 2, 1, 7, 5)]);
    const two = ringsToRuns([[0, 0, 3, 0, 3, 2, 0, 2], [2, 1, 6, 1, 6, 4, 2, 4]], 6, 8);
    const px = new Uint8Array(48);
    decodeRunsInto(two, px, 0, 48);
    assert.equal(runsArea(two), 6 + 12 - 1);
    assert.equal(px[1 * 8 + 2], 1);
    assert.deepEqual([...ringsToRuns([[-5, -5, 20, -5, 20, 3, -5, 3]], 6, 8)], [...rectRuns(8, 6, 0, 0, 8, 3)]);
  });

  it('run-length intersection equals a pixel count on random masks', () => {
    const rand = mulberry32(3);
    for (let trial = 0; trial < 50; trial++) {
      const n = 1 + Math.floor(rand() * 300);
      const a = Uint8Array.from({ length: n }, () => (rand() < 0.4 ? 1 : 0));
      const b = Uint8Array.from({ length: n }, () => (rand() < 0.6 ? 1 : 0));
      const want = a.reduce((s, v, i) => s + (v & b[i]!), 0);
      assert.equal(runsIntersection(encodeRuns(a), encodeRuns(b)), want);
    }
  });
});

describe('segment validation metrics', () => {
  it('hand-built: two images, partial mask overlaps, a missed object, a false positive', () => {
    // image 0 (100x100): A = [10,50]x[10,50] (1600 px, medium), B = [60,90]x[60,90] (900 px, small, missed)
    // image 1 (100x100): C = [20,60]x[20,60] (1600 px, medium)
    const s = split([`${rectRow(0, 100, 100, 10, 10, 50, 50)}\n${rectRow(0, 100, 100, 60, 60, 90, 90)}\n`, `${rectRow(0, 100, 100, 20, 20, 60, 60)}\n`]);
    // d1 (0.9) on A: exact box, mask rows 10..42 only: IoU 40*33/1600 = 0.825
    // d2 (0.8) on C: exact box, mask columns 31..59 only: IoU 29*40/1600 = 0.725
    // d3 (0.7) in image 1 over nothing: a false positive (box 25x25, small)
    const preds = [
      prediction(100, 100, [{ box: [10, 10, 50, 50], score: 0.9, runs: rectRuns(100, 100, 10, 10, 50, 43) }]),
      prediction(100, 100, [
        { box: [20, 20, 60, 60], score: 0.8, runs: rectRuns(100, 100, 31, 20, 60, 60) },
        { box: [70, 70, 95, 95], score: 0.7, runs: rectRuns(100, 100, 70, 70, 95, 95) },
      ]),
    ];
    const m = evaluatePredictions(s, preds, 'segment').metrics;
    // Masks, by IoU threshold t (3 objects, detections in score order d1, d2, d3):
    //   t <= 0.725 (5 thresholds): TP TP FP -> recall 1/3 2/3 2/3, precision 1 1 2/3: precision 1 up to
    //     recall 2/3 -> recall points 0.00..0.66 (67 of 101): AP 67/101, final recall 2/3
    //   0.725 < t <= 0.825 (0.75, 0.80): TP FP FP -> precision 1 up to recall 1/3 (34 points): AP 34/101, recall 1/3
    //   t > 0.825 (0.85, 0.90, 0.95): nothing matches: AP 0, recall 0
    const tiers = IOU_THRESHOLDS.map((t) => (t <= 0.725 ? 0 : t <= 0.825 ? 1 : 2));
    assert.deepEqual(tiers, [0, 0, 0, 0, 0, 1, 1, 2, 2, 2]);
    close(m['metrics/mAP50-95'], (5 * 67 + 2 * 34) / 1010, 'mask mAP50-95');
    close(m['metrics/mAP50'], 67 / 101, 'mask mAP50');
    close(m['metrics/mAP75'], 34 / 101, 'mask mAP75');
    close(m['metrics/mAP50-95(M)'], (5 * 67 + 2 * 34) / 1010, 'mAP50-95(M)');
    close(m['metrics/mAP50(M)'], 67 / 101, 'mAP50(M)');
    close(m['metrics/precision(M)'], (5 * 67 + 2 * 34) / 1010, 'precision(M): every entry at area all is valid');
    close(m['metrics/recall(M)'], (5 * (2 / 3) + 2 * (1 / 3)) / 10, 'recall(M)');
    close(m['metrics/AR100'], 0.4, 'AR100');
    // AR1: one detection per image: d1 and d2 count, d3 is cut: the same recalls here.
    close(m['metrics/AR1'], 0.4, 'AR1');
    // small: only B counts (missed); d1, d2 match ignored objects, d3 (625 px box) is a small FP: AP 0
    close(m['metrics/mAP_small'], 0, 'mAP_small');
    // medium: A and C; d3's box is small, so unmatched it is ignored: t <= 0.725 AP 1; 0.75, 0.80: TP FP ->
    //   precision 1 up to recall 1/2 (51 points); above: 0
    close(m['metrics/mAP_medium'], (5 * 1 + 2 * 51 / 101) / 10, 'mAP_medium');
    close(m['metrics/mAP_large'], -1, 'mAP_large: no large object');
    // Boxes: d1 and d2 are exact at every threshold, d3 a FP: TP TP FP everywhere -> 67/101
    close(m['metrics/mAP50-95(B)'], 67 / 101, 'mAP50-95(B)');
    close(m['metrics/mAP50(B)'], 67 / 101, 'mAP50(B)');
    close(m['metrics/precision(B)'], 67 / 101, 'precision(B)');
    close(m['metrics/recall(B)'], 2 / 3, 'recall(B)');
    assert.equal(m['metrics/precision'], undefined, 'no unsuffixed precision on segment models');
  });

  it('a box-only row is an empty ground-truth mask: its exact box scores 1, its mask 0', () => {
    const s = split(['0 0.5 0.5 0.4 0.4\n']);
    const preds = [prediction(50, 50, [{ box: [15, 15, 35, 35], score: 0.9, runs: rectRuns(50, 50, 15, 15, 35, 35) }])];
    const m = evaluatePredictions(s, preds, 'segment').metrics;
    close(m['metrics/mAP50-95(B)'], 1, 'box');
    close(m['metrics/mAP50-95'], 0, 'mask');
    close(m['metrics/mAP50(M)'], 0, 'mask');
  });

  it('only the top 100 detections of an image count', () => {
    const s = split([`${rectRow(0, 64, 64, 10, 10, 30, 30)}\n`]);
    const hit = { box: [10, 10, 30, 30], runs: rectRuns(64, 64, 10, 10, 30, 30) };
    const misses = (n: number): { box: number[]; score: number; runs: Int32Array }[] =>
      Array.from({ length: n }, (_, i) => ({ box: [40, 40, 60, 60], score: 0.9 - i * 1e-4, runs: rectRuns(64, 64, 40, 40, 60, 60) }));
    const at100 = evaluatePredictions(s, [prediction(64, 64, [...misses(99), { ...hit, score: 0.5 }])], 'segment').metrics;
    close(at100['metrics/AR100'], 1, 'the match is the 100th detection');
    const at101 = evaluatePredictions(s, [prediction(64, 64, [...misses(100), { ...hit, score: 0.5 }])], 'segment').metrics;
    close(at101['metrics/AR100'], 0, 'the match is the 101st detection');
    close(at101['metrics/mAP50-95'], 0, 'mask mAP without the 101st');
  });

  it('a segment prediction without one mask per box, or with masks of another size, is refused', () => {
    const s = split([`${rectRow(0, 64, 64, 10, 10, 30, 30)}\n`]);
    const p = prediction(64, 64, [{ box: [10, 10, 30, 30], score: 0.9, runs: rectRuns(64, 64, 10, 10, 30, 30) }]);
    assert.throws(() => evaluatePredictions(s, [{ ...p, masks: null }], 'segment'), /one mask per detection: image 0 has 1 boxes and 0 masks/);
    assert.throws(() => evaluatePredictions(s, [{ ...p, masks: { runs: [rectRuns(32, 32, 1, 1, 5, 5)] } }], 'segment'), /covers 1024 pixels, expected its original size 64x64/);
  });

  it('the ground truth of a synthetic segment set fed back as predictions gives mask and box mAP 1', async () => {
    const out = tempDir();
    const r = await generateSynthDataset({ out: join(out, 'seg'), train: 1, val: 4, imgsz: 96, task: 'segment', seed: 11 });
    const data = await loadDataset(r.yaml, 'val');
    let objects = 0;
    const preds: PredictionLike[] = [];
    for (let i = 0; i < data.images.length; i++) {
      const meta = await sharp(data.images[i]!).metadata();
      const w = meta.width!, h = meta.height!;
      const { rows, n, segments } = data.labels[i]!;
      assert.equal(segments?.length, n, 'every synthetic row is a polygon');
      const dets = Array.from({ length: n }, (_, k) => {
        const ring = segments![k]!;
        const px = Array.from(ring, (v, j) => v * (j % 2 ? h : w));
        const xs = px.filter((_, j) => j % 2 === 0), ys = px.filter((_, j) => j % 2 === 1);
        return { box: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)], score: 0.9 - k * 0.01, cls: rows[k * 5]!, runs: ringsToRuns([px], h, w) };
      });
      objects += n;
      preds.push(prediction(w, h, dets));
    }
    assert.ok(objects >= 4, `${objects} objects`);
    let call = 0;
    const model = {
      task: 'segment',
      predict: async (paths: string[]) => { const res = preds.slice(call, call + paths.length); call += paths.length; return res; },
    };
    const v = await validate(model, r.yaml, { split: 'val' });
    close(v.metrics['metrics/mAP50-95'], 1, 'mask mAP50-95');
    close(v.metrics['metrics/mAP50-95(M)'], 1, 'mAP50-95(M)');
    close(v.metrics['metrics/mAP50-95(B)'], 1, 'mAP50-95(B)');
    assert.equal(v.instances, objects);
    // A mask from another object (shifted by one detection) is no longer a match.
    const shifted = preds.map((p) => ({ ...p, masks: p.masks ? { runs: [...p.masks.runs.slice(1), p.masks.runs[0]!] } : null }));
    call = 0;
    const mixed = await validate({ ...model, predict: async (paths: string[]) => { const res = shifted.slice(call, call + paths.length); call += paths.length; return res; } }, r.yaml, { split: 'val' });
    assert.ok(mixed.metrics['metrics/mAP50-95']! < 1, `mixed masks: ${mixed.metrics['metrics/mAP50-95']}`);
    close(mixed.metrics['metrics/mAP50-95(B)'], 1, 'boxes unchanged');
  });
});
