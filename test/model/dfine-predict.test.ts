/**
 * Every predict control on D-FINE (the reference checkpoint, the original's photo): conf (strict),
 * classes and max_det on the top-k selection, boxes unclipped, batching and streaming (stacked
 * forwards give the per-image results), flip-only TTA (TTA_FIXED_SIZE) merged by per-class NMS at
 * `iou`, tiling into 640 tiles merged, `half` warning and changing nothing, an unavailable device
 * named, and cuda_graph / capture_graph refused (SUPPORTS_CUDA_GRAPH is false, as the original).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { join } from 'node:path';
import { LibreYOLO, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { loadImageFile } from '../../src/data/image.ts';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { mergeDetections, truncate } from '../../src/predict/merge.ts';
import { flipHorizontal } from '../../src/predict/tta.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { assertResultsClose, assertTilingMatchesTiles } from '../helpers/predict-controls.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg');

describe('D-FINE predict controls', () => {
  let model: LibreYOLOModel;
  let photo: RgbImage;
  let plain: Results;
  const warnings: string[] = [];
  before(async () => {
    model = await LibreYOLO(fixture('dfinen_ref.pt'), { progress: false, threads: 2, warn: (w) => warnings.push(w) });
    photo = await loadImageFile(PHOTO);
    plain = await model.predict(PHOTO, { conf: 0.25 }) as Results;
  });
  after(async () => {
    await model.close();
  });

  it('conf, classes and max_det act on the top-k selection as the original; boxes are not clipped', async () => {
    assert.ok(plain.length > 29 && plain.length <= 300, `${plain.length} detections at conf 0.25`);
    const high = await model.predict(PHOTO, { conf: 0.5 }) as Results;
    assert.equal(high.length, 29);
    assert.deepEqual(high.boxes.data, plain.boxes.data.filter((row) => row[4]! > 0.5), 'conf is a strict filter of the same selection');
    const cls = plain.boxes.clsData[0]!;
    const only = await model.predict(PHOTO, { conf: 0.25, classes: [cls] }) as Results;
    assert.deepEqual(only.boxes.data, plain.boxes.data.filter((row) => row[5] === cls));
    const ten = await model.predict(PHOTO, { conf: 0.25, max_det: 10 }) as Results;
    assert.deepEqual(ten.boxes.data, plain.boxes.data.slice(0, 10), 'max_det 10 keeps the 10 best pairs');
    const all = await model.predict(PHOTO, { conf: 0, max_det: 500 }) as Results;
    assert.equal(all.length, 500, 'max_det above 300 takes more query x class pairs, as the original\'s k = min(max_det, Q * nc)');
    assert.ok(all.boxes.xyxyData.some((v) => v < 0) || all.boxes.xyxy.some(([, , x2, y2]) => x2! > photo.width || y2! > photo.height), 'boxes are not clipped to the image');
  });

  it('batch 2 stacks both images into one forward with the per-image results; stream yields the same in order', async () => {
    const mirrored = flipHorizontal(photo);
    const single = await model.predict({ ...mirrored }, { conf: 0.25 }) as Results;
    const both = await model.predict([{ ...photo }, { ...mirrored }], { conf: 0.25, batch: 2 }) as Results[];
    assert.equal(both.length, 2);
    assert.ok(model.engine.sessionKeys().some((k) => /\|2x3x640x640$/.test(k)), `one stacked 2x3x640x640 forward (sessions ${model.engine.sessionKeys().join(', ')})`);
    assertResultsClose(both[0]!, plain, 1e-2, 1e-5);
    assertResultsClose(both[1]!, single, 1e-2, 1e-5);
    const streamed: Results[] = [];
    for await (const r of model.predict([{ ...photo }, { ...mirrored }], { conf: 0.25, batch: 2, stream: true })) streamed.push(r);
    assert.equal(streamed.length, 2);
    assert.deepEqual(streamed.map((r) => r.boxes.data), both.map((r) => r.boxes.data));
  });

  it('augment: the flip view only (fixed-size family), merged by per-class NMS at iou over both views', async () => {
    const mirrored = await model.predict({ ...flipHorizontal(photo) }, { conf: 0.25 }) as Results;
    const tta = await model.predict(PHOTO, { conf: 0.25, augment: true }) as Results;
    const W = photo.width;
    const flippedBack = { xyxy: Float32Array.from(mirrored.boxes.xyxy.flatMap(([x1, y1, x2, y2]) => [W - x2!, y1!, W - x1!, y2!])), conf: mirrored.boxes.confData, cls: mirrored.boxes.clsData };
    const expected = truncate(mergeDetections([{ xyxy: plain.boxes.xyxyData, conf: plain.boxes.confData, cls: plain.boxes.clsData }, flippedBack], 0.45), 300);
    assert.equal(tta.length, expected.conf.length);
    assert.ok(tta.length < plain.length + mirrored.length, 'overlapping boxes of the two views were merged');
    assert.deepEqual(Array.from(tta.boxes.confData), Array.from(expected.conf));
    for (let k = 0; k < expected.xyxy.length; k++) assert.ok(Math.abs(tta.boxes.xyxyData[k]! - expected.xyxy[k]!) <= 1e-3, `box value ${k}`);
  });

  it('tiling: 640 tiles of a large image, each predicted on its own, offset and merged', async () => {
    await assertTilingMatchesTiles(model, photo, 640);
  });

  it('half warns once and changes nothing; an unavailable device is named with what to do', async () => {
    const half = await model.predict(PHOTO, { conf: 0.25, half: true }) as Results;
    assert.deepEqual(half.boxes.data, plain.boxes.data);
    await model.predict(PHOTO, { conf: 0.25, half: true });
    assert.equal(warnings.filter((w) => /^half=true changes nothing here/.test(w)).length, 1);
    await assert.rejects(model.predict(PHOTO, { device: 'cuda:0' }), (e: Error) => /^Device 'cuda:0' is not available: .*pass device=cpu/s.test(e.message));
    const again = await model.predict(PHOTO, { conf: 0.25, device: 'cpu' }) as Results;
    assert.deepEqual(again.boxes.data, plain.boxes.data);
  });

  it('cuda_graph and capture_graph are refused for D-FINE (not verified for the family), false runs', async () => {
    const message = /cuda_graph is not supported for the 'dfine' family yet/;
    await assert.rejects(model.predict(PHOTO, { cuda_graph: true }), message);
    await assert.rejects(model.capture_graph(), message);
    assert.equal(model.graph_info().supported, false);
    assert.equal((await model.predict(PHOTO, { conf: 0.5, cuda_graph: false }) as Results).length, 29);
  });
});
