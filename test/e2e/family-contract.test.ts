/**
 * The family contract's generic points, each against hand-worked values: input specs (letterbox pad,
 * BGR / 0..255 / mean-std, resize-stretch with its two ratios), postprocess kinds (class-agnostic
 * NMS, NMS-free top-k), fixed input sizes, hub names from `filenamePrefix`, fresh-model names,
 * families that cannot train, and the CLI naming the families.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createFreshModel, parseFreshName } from '../../src/load.ts';
import { checkFamilyImgsz, getFamily, trainingHooks, unregisterFamily, type PreprocessSpec } from '../../src/models/index.ts';
import { postprocessDetections, type PostprocessOptions } from '../../src/predict/postprocess.ts';
import { letterboxPlan, stretchPlan, toNetworkLayout } from '../../src/predict/preprocess.ts';
import { knownWeightNames, parseWeightName, weightsUrl } from '../../src/models/hub.ts';
import { blobModel, registerTestFamily } from '../helpers/test-families.ts';
import { runCli } from '../helpers/cli.ts';

const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-contract-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** A 2x2 RGB image: pixel k has R = 10k+1, G = 10k+2, B = 10k+3. */
const tiny = { width: 2, height: 2, data: Uint8Array.from([1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32, 33]) };

describe('input specs', () => {
  it('BGR 0..255 with mean/std: channels swapped, whole pixel values, (v - mean) / std', () => {
    const spec: PreprocessSpec = { resize: 'letterbox', pad: 114, channels: 'bgr', scale: 1, mean: [1, 2, 3], std: [2, 4, 8] };
    const plan = letterboxPlan(tiny, [2, 2], spec);
    const out = new Float32Array(12);
    plan.write(out, 0);
    // plane 0 = B: (3,13,23,33 - 1)/2; plane 1 = G: (2,12,22,32 - 2)/4; plane 2 = R: (1,11,21,31 - 3)/8
    assert.deepEqual(Array.from(out), [1, 6, 11, 16, 0, 2.5, 5, 7.5, -0.25, 1, 2.25, 3.5]);
  });

  it('letterbox pads right and bottom with the spec pad value', () => {
    const spec: PreprocessSpec = { resize: 'letterbox', pad: 0, channels: 'rgb', scale: 1 };
    const out = new Float32Array(3 * 2 * 4);
    const plan = letterboxPlan(tiny, [2, 4], spec);
    assert.equal(plan.ratio, 1);
    plan.write(out, 0);
    assert.deepEqual(Array.from(out.subarray(0, 8)), [1, 11, 0, 0, 21, 31, 0, 0]);
  });

  it('resize-stretch fills the canvas and has separate x and y ratios', () => {
    const spec: PreprocessSpec = { resize: 'stretch', pad: 0, channels: 'rgb', scale: 1 };
    const plan = stretchPlan(tiny, [4, 2], spec);
    assert.equal(plan.ratio, 1);
    assert.equal(plan.ratioY, 2);
    const out = new Float32Array(3 * 4 * 2);
    plan.write(out, 0);
    // no padding anywhere: the top row keeps row 0's values, the bottom row row 1's
    assert.deepEqual(Array.from(out.subarray(0, 2)), [1, 11]);
    assert.deepEqual(Array.from(out.subarray(6, 8)), [21, 31]);
  });

  it('toNetworkLayout turns a loader batch (RGB u8/255) into BGR 0..255 exactly', () => {
    const img = Float32Array.from([10, 20, 30, 40, 50, 60].map((v) => Math.fround(v / 255)));
    toNetworkLayout(img, [1, 3, 1, 2], { resize: 'letterbox', pad: 114, channels: 'bgr', scale: 1 });
    assert.deepEqual(Array.from(img), [50, 60, 30, 40, 10, 20]);
  });
});

describe('postprocess kinds', () => {
  // Two anchors, two classes: anchor 0 class 0 at 0.9, anchor 1 class 1 at 0.8, boxes with IoU 0.81.
  const A = 2, nc = 2;
  const out = new Float32Array((4 + nc) * A);
  const boxes = [[0, 0, 100, 100], [0, 0, 100, 81]];
  boxes.forEach((b, a) => b.forEach((v, k) => (out[k * A + a] = v)));
  out[4 * A + 0] = 0.9;
  out[5 * A + 1] = 0.8;
  const base: PostprocessOptions = { conf: 0.25, iou: 0.45, maxDet: 300, ratio: 1, origWidth: 1000, origHeight: 1000 };

  it('per-class NMS keeps overlapping boxes of different classes; agnostic NMS keeps the best only', () => {
    assert.deepEqual(Array.from(postprocessDetections(out, 0, A, nc, base).cls), [0, 1]);
    const agn = postprocessDetections(out, 0, A, nc, { ...base, agnostic: true });
    assert.deepEqual(Array.from(agn.cls), [0]);
    assert.deepEqual(Array.from(agn.conf), [Math.fround(0.9)]);
  });

  it('top-k takes the k best (query, class) pairs with no NMS, then conf, then the y ratio', () => {
    const top1 = postprocessDetections(out, 0, A, nc, { ...base, topk: 1 });
    assert.deepEqual(Array.from(top1.cls), [0]);
    const all = postprocessDetections(out, 0, A, nc, { ...base, topk: 4, ratioY: 2 });
    // pairs (a0,c0)=0.9 and (a1,c1)=0.8 pass conf; the two zero pairs do not; no suppression despite IoU 0.81
    assert.deepEqual(Array.from(all.cls), [0, 1]);
    assert.deepEqual(Array.from(all.xyxy), [0, 0, 100, 50, 0, 0, 100, 40.5]);
  });
});

describe('family contract', () => {
  it('a fixed-size family refuses other input sizes, naming the sizes it runs', async () => {
    const model = blobModel('test_fixed', {});
    try {
      const family = { ...model.family, fixedImgsz: [320] };
      assert.doesNotThrow(() => checkFamilyImgsz(family, [320, 320]));
      assert.throws(() => checkFamilyImgsz(family, [320, 640]), /test_fixed models run at 320x320 only, got 320x640/);
    } finally {
      await model.close();
      unregisterFamily('test_fixed');
    }
  });

  it('hub names come from each family\'s filenamePrefix and sizes', () => {
    assert.deepEqual(parseWeightName('LibreYOLOXs.pt'), { family: 'yolox', size: 's', taskSuffix: '', stem: 'LibreYOLOXs' });
    assert.deepEqual(parseWeightName('weights/libreyolo9T.pt'), { family: 'yolo9', size: 't', taskSuffix: '', stem: 'LibreYOLO9t' });
    assert.equal(parseWeightName('LibreYOLOXq.pt'), null);
    assert.ok(knownWeightNames().includes('LibreYOLOXn.pt'));
    assert.equal(weightsUrl('LibreYOLOXn'), 'https://huggingface.co/LibreYOLO/LibreYOLOXn/resolve/main/LibreYOLOXn.pt');
  });

  it('fresh-model names are <family><size> or <family>-<size>', () => {
    assert.deepEqual(parseFreshName('yolo9t'), { family: 'yolo9', size: 't' });
    assert.deepEqual(parseFreshName('YOLOX-n'), { family: 'yolox', size: 'n' });
    assert.equal(parseFreshName('yolo9x'), null);
    assert.throws(() => createFreshModel('yolo9x'), /names no family and size/);
  });

  it('a family without training hooks is refused by name', () => {
    const family = registerTestFamily('test_untrainable', {}, { train: undefined });
    try {
      assert.throws(() => trainingHooks(family), /Training is not implemented for test_untrainable models; trainable families: yolo9/);
      assert.equal(trainingHooks(getFamily('yolo9')).lossNames.join(','), 'box,dfl,cls');
    } finally {
      unregisterFamily('test_untrainable');
    }
  });

  it('libreyolo --help lists the registered families', async () => {
    const r = await runCli(['--help'], tmp);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /Model families: yolo9 \(YOLOv9: t, s, m, c\); yolox \(YOLOX: n, t, s, m, l, x\)/);
  });
});
