/**
 * D-FINE validation prepares images as the original's validator (dfine.md 4.3, DFINEValPreprocessor),
 * not as predict: the validation dataset first fits the image into 640 with OpenCV INTER_LINEAR,
 * aspect kept, to (int(W0 r), int(H0 r)); OpenCV then stretches that to 640x640 (predict stretches
 * the original once with Pillow's antialiased bilinear). Boxes go back to the original image.
 * Checked on the input plan, on `predictForValidation()` (the validator's entry: the network on the
 * double-resized photo, then the usual top-k), and on `validate()`, whose metrics must be those of
 * that entry and not of predict().
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadImageFile } from '../../src/data/image.ts';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { resizeBilinear } from '../../src/data/letterbox.ts';
import { LibreYOLO, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { dfineFamily } from '../../src/models/dfine/family.ts';
import { dfineTopk } from '../../src/models/dfine/postprocess.ts';
import { planFor, validationPlanFor } from '../../src/predict/preprocess.ts';
import { loadDataset } from '../../src/data/dataset.ts';
import { evaluatePredictions, validate } from '../../src/val/validate.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg'); // 1280 x 852
const S = 640;

function tensorOf(plan: ReturnType<typeof planFor>): Float32Array {
  const out = new Float32Array(3 * S * S);
  plan.write(out, 0);
  return out;
}

/** The image's pixels as a [3, H, W] RGB 0..1 tensor, as the original's `float32(u8) / 255`. */
function chw(img: RgbImage): Float32Array {
  const plane = img.width * img.height;
  const out = new Float32Array(3 * plane);
  for (let k = 0; k < plane; k++) for (let c = 0; c < 3; c++) out[c * plane + k] = Math.fround(img.data[k * 3 + c]! / 255);
  return out;
}

describe('D-FINE validation preprocessing (the original\'s OpenCV double resize)', () => {
  let model: LibreYOLOModel;
  let photo: RgbImage;
  const dir = mkdtempSync(join(tmpdir(), 'libreyolo-dfine-val-'));

  before(async () => {
    model = await LibreYOLO(fixture('dfinen_ref.pt'), { progress: false, threads: 2 });
    photo = await loadImageFile(PHOTO);
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the plan: 1280x852 fitted to 640x426 (int(W0 r), int(H0 r)), then stretched to 640x640, both INTER_LINEAR; boxes back by 1280/640, 852/640', () => {
    assert.deepEqual([photo.width, photo.height], [1280, 852]);
    const plan = validationPlanFor(dfineFamily, photo, [S, S]);
    assert.deepEqual(plan.dims, [1, 3, S, S]);
    assert.equal(plan.ratio, S / 1280);
    assert.equal(plan.ratioY, S / 852);
    // r = min(640/852, 640/1280) = 0.5: int(1280 * 0.5) x int(852 * 0.5) = 640 x 426.
    const want = chw(resizeBilinear(resizeBilinear(photo, 640, 426), S, S));
    const got = tensorOf(plan);
    let diff = 0;
    for (let k = 0; k < got.length; k++) if (got[k] !== want[k]) diff++;
    assert.equal(diff, 0, `${diff} values differ from the OpenCV double resize`);
    // Not the predict input (one Pillow stretch of the original).
    const pred = tensorOf(planFor(dfineFamily, photo, [S, S]));
    let moved = 0;
    for (let k = 0; k < got.length; k++) if (got[k] !== pred[k]) moved++;
    assert.ok(moved > got.length / 10, `only ${moved} of ${got.length} values differ from predict's input`);
  });

  it('predictForValidation() runs the network on the double-resized photo (top-k, boxes in the original image), unlike predict()', async () => {
    const input = chw(resizeBilinear(resizeBilinear(photo, 640, 426), S, S));
    const out = await model.forward({ dtype: 'float32', dims: [1, 3, S, S], data: input });
    const o = out.data as Float32Array;
    // The predict layout [1, 84, 300] back to the original's logits / boxes: boxes cxcywh / 640, scores as logits.
    const Q = 300, nc = 80;
    const logits = new Float32Array(Q * nc), boxes = new Float32Array(Q * 4);
    for (let q = 0; q < Q; q++) {
      const [x1, y1, x2, y2] = [o[q]!, o[Q + q]!, o[2 * Q + q]!, o[3 * Q + q]!];
      boxes.set([(x1 + x2) / 2 / S, (y1 + y2) / 2 / S, (x2 - x1) / S, (y2 - y1) / S], q * 4);
      for (let c = 0; c < nc; c++) { const p = o[(4 + c) * Q + q]!; logits[q * nc + c] = Math.log(p) - Math.log1p(-p); }
    }
    const want = dfineTopk(logits, boxes, 0, Q, nc, { conf: 0.3, maxDet: 300, origWidth: 1280, origHeight: 852 });
    const [got] = await model.predictForValidation([PHOTO], { conf: 0.3 });
    assert.equal(got!.boxes.length, want.conf.length, `${got!.boxes.length} detections, expected ${want.conf.length}`);
    assert.ok(want.conf.length > 5, `${want.conf.length} detections at conf 0.3`);
    for (let i = 0; i < want.conf.length; i++) {
      assert.equal(got!.boxes.clsData[i], want.cls[i], `detection ${i} class`);
      for (let c = 0; c < 4; c++) assert.ok(Math.abs(got!.boxes.xyxyData[i * 4 + c]! - want.xyxy[i * 4 + c]!) < 1e-3, `detection ${i} box`);
      assert.ok(Math.abs(got!.boxes.confData[i]! - want.conf[i]!) < 1e-6, `detection ${i} score`);
    }
    const viaPredict = (await model.predict(PHOTO, { conf: 0.3 })) as Results;
    let same = viaPredict.boxes.length === got!.boxes.length;
    for (let i = 0; same && i < got!.boxes.length * 4; i++) if (Math.abs(viaPredict.boxes.xyxyData[i]! - got!.boxes.xyxyData[i]!) > 1e-3) same = false;
    assert.ok(!same, 'predict() gives the same detections: the check cannot tell the two preprocessings apart');
  });

  it('validate() scores the validation entry\'s detections, not predict()\'s', async () => {
    // Ground truth = the validation path's own confident detections, so its mAP is high and any
    // other preprocessing moves boxes away from it.
    const [val] = await model.predictForValidation([PHOTO], { conf: 0.5 });
    // (D-FINE's boxes are not clipped; labels must lie inside the image.)
    const lines = val!.boxes.xyxy.map((b, i) => {
      const [x1, y1, x2, y2] = b.map((v, c) => Math.min(Math.max(v, 0), c % 2 ? 852 : 1280)) as [number, number, number, number];
      return `${val!.boxes.clsData[i]} ${((x1 + x2) / 2 / 1280).toFixed(6)} ${((y1 + y2) / 2 / 852).toFixed(6)} ${((x2 - x1) / 1280).toFixed(6)} ${((y2 - y1) / 852).toFixed(6)}`;
    });
    for (const sub of ['images/val', 'labels/val']) mkdirSync(join(dir, 'ds', sub), { recursive: true });
    copyFileSync(PHOTO, join(dir, 'ds/images/val/parkour.jpg'));
    writeFileSync(join(dir, 'ds/labels/val/parkour.txt'), `${lines.join('\n')}\n`);
    const names = Array.from({ length: 80 }, (_, i) => `c${i}`);
    const yaml = join(dir, 'ds/data.yaml');
    writeFileSync(yaml, `path: ${join(dir, 'ds')}\ntrain: images/val\nval: images/val\nnames: [${names.join(', ')}]\n`);

    const split = await loadDataset(yaml, 'val');
    const opts = { conf: 0.001, iou: 0.6, max_det: 300, batch: 16 };
    const got = (await validate(model, split, opts)).metrics;
    const viaVal = evaluatePredictions(split, await model.predictForValidation(split.images, opts)).metrics;
    const viaPredict = evaluatePredictions(split, await model.predict(split.images, opts)).metrics;
    console.log(`# mAP50-95: validate() ${got['metrics/mAP50-95']!.toFixed(4)}, validation entry ${viaVal['metrics/mAP50-95']!.toFixed(4)}, predict() ${viaPredict['metrics/mAP50-95']!.toFixed(4)}`);
    for (const k of ['metrics/mAP50', 'metrics/mAP50-95', 'metrics/mAP75', 'metrics/AR100']) assert.equal(got[k], viaVal[k], `${k}`);
    assert.notEqual(viaPredict['metrics/mAP50-95'], viaVal['metrics/mAP50-95'], 'predict() scores the same: the check cannot tell the two apart');
  });
});
