/**
 * Test-time augmentation: the original view plus its mirror (times TTA_SCALES), mirrored boxes
 * mapped back, merged by per-class NMS at `iou`; TTA_FIXED_SIZE uses the flip only; families with
 * TTA_ENABLED=false run one plain pass; tasks that cannot be augmented raise the original's errors.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LibreYOLO, LibreYOLOModel, SAMPLE_IMAGE, type Results } from '../../src/index.ts';
import { loadImageFile } from '../../src/data/image.ts';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { unregisterFamily } from '../../src/models/registry.ts';
import { batchedNms } from '../../src/predict/merge.ts';
import { cropImage } from '../../src/predict/tiling.ts';
import { flipHorizontal, ttaViews, unmapView } from '../../src/predict/tta.ts';
import { setSpanRecorder, type HostSpan } from '../../src/runtime/spans.ts';
import { blobModel, FIXTURE_MODEL, loadAs, registerTestFamily } from '../helpers/test-families.ts';

const CONF = 0.00016;
const S = 320;

describe('TTA building blocks', () => {
  it('mirrors an image and maps mirrored / scaled boxes back', () => {
    const img: RgbImage = { data: Uint8Array.from({ length: 2 * 3 * 3 }, (_, k) => k), width: 3, height: 2 };
    const f = flipHorizontal(img);
    assert.deepEqual(Array.from(f.data.subarray(0, 9)), [6, 7, 8, 3, 4, 5, 0, 1, 2]);
    const views = ttaViews({ data: new Uint8Array(40 * 20 * 3), width: 40, height: 20 }, [1, 0.5]);
    assert.deepEqual(views.map((v) => [v.image.width, v.image.height, v.scale, v.flipped]), [[40, 20, 1, false], [40, 20, 1, true], [20, 10, 0.5, false], [20, 10, 0.5, true]]);
    const det = { xyxy: Float32Array.of(2, 1, 5, 4), conf: Float32Array.of(0.9), cls: Float32Array.of(0) };
    assert.deepEqual(Array.from(unmapView(det, views[1]!, 40, 20).xyxy), [35, 1, 38, 4]);
    const scaled = { xyxy: Float32Array.of(2, 1, 19, 12), conf: Float32Array.of(0.9), cls: Float32Array.of(0) };
    assert.deepEqual(Array.from(unmapView(scaled, views[2]!, 40, 20).xyxy), [4, 2, 38, 20], 'divided by the scale, clamped to the image');
  });

  it('merges with per-class NMS: strictly-above-threshold overlap suppresses, other classes never do', () => {
    const xyxy = Float32Array.of(0, 0, 10, 10, 1, 0, 11, 10, 0, 0, 10, 10, 50, 50, 60, 60);
    const conf = Float32Array.of(0.5, 0.9, 0.8, 0.7);
    const cls = Float32Array.of(0, 0, 1, 0);
    assert.deepEqual(batchedNms(xyxy, conf, cls, 0.45), [1, 2, 3]);
    assert.deepEqual(batchedNms(xyxy, conf, cls, 0.9), [1, 2, 3, 0], 'IoU 9/11 is not above 0.9');
  });
});

describe('augment: true', () => {
  let dir: string;
  let model: LibreYOLOModel;
  let square: RgbImage;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ly-tta-'));
    model = await LibreYOLO(FIXTURE_MODEL(), { progress: false });
    square = cropImage(await loadImageFile(SAMPLE_IMAGE), [400, 200, 400 + S, 200 + S]);
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const views = async (m: LibreYOLOModel, source: Parameters<LibreYOLOModel['predict']>[0], opts: Record<string, unknown>): Promise<{ result: Results; letterboxed: number }> => {
    const spans: HostSpan[] = [];
    setSpanRecorder({ record: (s) => spans.push(s) });
    try {
      const result = await m.predict(source as string, { conf: CONF, imgsz: S, ...opts }) as Results;
      return { result, letterboxed: spans.filter((s) => s.name === 'letterbox').length };
    } finally {
      setSpanRecorder(null);
    }
  };

  it('on a mirrored image gives the mirrored detections; the flipped view is mapped back onto the original one', async () => {
    // The blob network's detections follow the image (one box per 32x32 cell, scored by brightness),
    // so a mirrored image must give exactly mirrored detections.
    const m = blobModel('test_blobs');
    try {
      const cells: RgbImage = { data: new Uint8Array(S * S * 3), width: S, height: S };
      for (let y = 0; y < S; y++) for (let x = 0; x < S; x++) {
        const v = (((y >> 5) * 10 + (x >> 5)) * 37) % 251; // a distinct level per cell
        cells.data.fill(v, (y * S + x) * 3, (y * S + x) * 3 + 3);
      }
      const opts = { conf: 0.5, iou: 0.45 };
      const plain = await m.predict({ ...cells }, opts) as Results;
      const a = await views(m, { ...cells }, { ...opts, augment: true });
      const b = await views(m, { ...flipHorizontal(cells) }, { ...opts, augment: true });
      assert.equal(a.letterboxed, 2, 'original and mirrored view');
      assert.ok(plain.length > 10);
      // The mirrored view's boxes, mapped back, land exactly on the original view's and merge away.
      assert.deepEqual(a.result.boxes.data, plain.boxes.data);
      assert.equal(b.result.length, a.result.length);
      a.result.boxes.data.forEach(([x1, y1, x2, y2, c, k], row) => {
        assert.deepEqual(b.result.boxes.data[row], [S - x2!, y1, S - x1!, y2, c, k], `row ${row} mirrored`);
      });
    } finally {
      await m.close();
      unregisterFamily('test_blobs');
    }
  });

  it('keeps the best boxes of both views: the merge is per-class NMS over their union', async () => {
    const plain = await model.predict({ ...square }, { conf: CONF, imgsz: S }) as Results;
    const mirrored = await model.predict({ ...flipHorizontal(square) }, { conf: CONF, imgsz: S }) as Results;
    const tta = (await views(model, { ...square }, { augment: true })).result;
    // Every merged box is a detection of one of the two views (the mirrored one mapped back).
    const candidates = [...plain.boxes.data, ...mirrored.boxes.data.map(([x1, y1, x2, y2, c, k]) => [S - x2!, y1, S - x1!, y2, c, k])];
    for (const row of tta.boxes.data) {
      assert.ok(candidates.some((c) => c.every((v, j) => Math.abs(v! - row[j]!) <= 1e-3)), `merged row ${row.join(',')} comes from a view`);
    }
    assert.ok(tta.boxes.conf[0] === Math.max(plain.boxes.conf[0]!, mirrored.boxes.conf[0]!), 'the top score of either view survives');
  });

  it('filters classes after the merge and cuts to max_det', async () => {
    const all = (await views(model, { ...square }, { augment: true })).result;
    const cls = all.boxes.cls[0]!;
    const only = (await views(model, { ...square }, { augment: true, classes: [cls] })).result;
    assert.ok(only.length > 0 && only.boxes.cls.every((c) => c === cls));
    const two = (await views(model, { ...square }, { augment: true, max_det: 2 })).result;
    assert.deepEqual(two.boxes.data, all.boxes.data.slice(0, 2));
  });

  it('runs every scale of TTA_SCALES (flipped too), but only the flip for TTA_FIXED_SIZE families', async () => {
    registerTestFamily('test_tta_scales', { TTA_SCALES: [1, 0.5] });
    registerTestFamily('test_tta_fixed', { TTA_SCALES: [1, 0.5], TTA_FIXED_SIZE: true });
    const scaled = await loadAs('test_tta_scales', dir);
    const fixed = await loadAs('test_tta_fixed', dir);
    try {
      assert.equal((await views(scaled, SAMPLE_IMAGE, { augment: true })).letterboxed, 4);
      assert.equal((await views(fixed, SAMPLE_IMAGE, { augment: true })).letterboxed, 2);
    } finally {
      await scaled.close();
      await fixed.close();
      unregisterFamily('test_tta_scales');
      unregisterFamily('test_tta_fixed');
    }
  });

  it('is one plain pass for a family with TTA_ENABLED=false', async () => {
    registerTestFamily('test_no_tta', { TTA_ENABLED: false });
    const m = await loadAs('test_no_tta', dir);
    try {
      const tta = await views(m, SAMPLE_IMAGE, { augment: true });
      const plain = await m.predict(SAMPLE_IMAGE, { conf: CONF, imgsz: S }) as Results;
      assert.equal(tta.letterboxed, 1);
      assert.deepEqual(tta.result.boxes.data, plain.boxes.data);
    } finally {
      await m.close();
      unregisterFamily('test_no_tta');
    }
  });

  it('raises the original errors for tasks that cannot be augmented', async () => {
    const missing = join(dir, 'missing.jpg');
    const withTask = (task: string): LibreYOLOModel => new LibreYOLOModel({
      family: model.family, size: model.size, task, names: model.names, imgsz: model.imgsz, weightsPath: null, format: 'pt', network: model.network, engine: model.engine,
    });
    await assert.rejects(withTask('embed').predict(missing, { augment: true }), /Test-time augmentation does not support embedding models\. Use augment=false\./);
    await assert.rejects(withTask('point').predict(missing, { augment: true }), /does not support point-task models yet\. Use augment=false for point models\./);
    await assert.rejects(withTask('edge').predict(missing, { augment: true }), /does not support edge detection yet\. Use augment=false for edge models\./);
    await assert.rejects(withTask('obb').predict(SAMPLE_IMAGE, { augment: true }), /Test-time augmentation does not support oriented boxes yet\. Use augment=false for OBB models\./);
    await assert.rejects(withTask('pose').predict(SAMPLE_IMAGE, { augment: true }), /does not support pose keypoints yet\. Use augment=false for pose models\./);
  });
});
