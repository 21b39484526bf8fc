/**
 * Every predict control on RF-DETR (the reference checkpoint, the original's photo): conf (strict),
 * classes, max_det (the top max_det over queries x classes), imgsz other than the native 384
 * (position table resized in-graph), batching (stacked forwards give the per-image results),
 * flip-only TTA (TTA_FIXED_SIZE) merged by per-class NMS, tiling, and cuda_graph refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { join } from 'node:path';
import { LibreYOLO, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { loadImageFile } from '../../src/data/image.ts';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { flipHorizontal } from '../../src/predict/tta.ts';
import { cropImage } from '../../src/predict/tiling.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { assertResultsClose, assertTilingMatchesTiles } from '../helpers/predict-controls.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg');

describe('RF-DETR predict controls', () => {
  let model: LibreYOLOModel;
  let photo: RgbImage;
  let plain: Results;
  before(async () => {
    model = await LibreYOLO(fixture('rfdetrn_ref.pt'), { progress: false, threads: 2 });
    photo = await loadImageFile(PHOTO);
    plain = await model.predict(PHOTO, { conf: 0.5 }) as Results;
  });
  after(async () => {
    await model.close();
  });

  it('conf, classes and max_det act on the top-k selection as the original', async () => {
    assert.equal(plain.length, 300);
    const high = await model.predict(PHOTO, { conf: 0.9 }) as Results;
    assert.ok(high.length > 0 && high.length < 300);
    assert.deepEqual(high.boxes.data, plain.boxes.data.filter((row) => row[4]! > 0.9), 'conf is a strict filter of the same selection');
    const cls = plain.boxes.clsData[0]!;
    const only = await model.predict(PHOTO, { conf: 0.5, classes: [cls] }) as Results;
    assert.deepEqual(only.boxes.data, plain.boxes.data.filter((row) => row[5] === cls));
    const ten = await model.predict(PHOTO, { conf: 0.5, max_det: 10 }) as Results;
    assert.deepEqual(ten.boxes.data, plain.boxes.data.slice(0, 10), 'max_det 10 keeps the 10 best pairs');
    assert.ok(plain.boxes.xyxyData.some((v) => v < 0) || plain.boxes.xyxy.some(([, , x2]) => x2! > photo.width), 'boxes are not clipped to the image');
  });

  it('imgsz other than the native size runs (the position table is resized for it)', async () => {
    const r = await model.predict(PHOTO, { conf: 0.5, imgsz: 320 }) as Results;
    assert.deepEqual(r.orig_shape, [852, 1280]);
    assert.equal(r.length, 300);
    assert.notDeepEqual(r.boxes.data, plain.boxes.data);
    // Stretched to 320x320: boxes still map back to the whole photo.
    assert.ok(r.boxes.xyxy.some(([x1]) => x1! > 640) && r.boxes.xyxy.some(([, y1]) => y1! > 426));
  });

  it('batch 2 stacks both images into one forward with the per-image results', async () => {
    const mirrored = flipHorizontal(photo);
    const single = await model.predict({ ...mirrored }, { conf: 0.5 }) as Results;
    const both = await model.predict([{ ...photo }, { ...mirrored }], { conf: 0.5, batch: 2 }) as Results[];
    assert.equal(both.length, 2);
    assertResultsClose(both[0]!, plain, 1e-2, 1e-5);
    assertResultsClose(both[1]!, single, 1e-2, 1e-5);
  });

  it('augment: the flip view only (fixed-size family), merged by per-class NMS over both views', async () => {
    assert.equal(model.family.capabilities.TTA_FIXED_SIZE, true);
    const mirrored = await model.predict({ ...flipHorizontal(photo) }, { conf: 0.5 }) as Results;
    const tta = await model.predict(PHOTO, { conf: 0.5, augment: true }) as Results;
    const W = photo.width;
    const candidates = [...plain.boxes.data, ...mirrored.boxes.data.map(([x1, y1, x2, y2, c, k]) => [W - x2!, y1!, W - x1!, y2!, c!, k!])];
    assert.ok(tta.length > 0);
    for (const row of tta.boxes.data) {
      assert.ok(candidates.some((c) => c.every((v, j) => Math.abs(v - row[j]!) <= 1e-3)), `merged row ${row.join(',')} comes from a view`);
    }
    assert.equal(tta.boxes.confData[0], Math.max(plain.boxes.confData[0]!, mirrored.boxes.confData[0]!));
  });

  it('tiling: tiles of the input size, each predicted on its own, offset and merged', async () => {
    await assertTilingMatchesTiles(model, cropImage(photo, [0, 0, 700, 420]), 384);
  });

  it('cuda_graph is refused for RF-DETR (capture not verified for the family), false runs', async () => {
    const message = /cuda_graph is not supported for the 'rfdetr' family yet/;
    await assert.rejects(model.predict(PHOTO, { cuda_graph: true }), message);
    await assert.rejects(model.capture_graph(), message);
    assert.equal(model.graph_info().supported, false);
  });
});
