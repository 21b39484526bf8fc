/**
 * Mixed-precision training (amp): the float16 training graph and dynamic loss scaling. The trainer
 * enables it on GPU providers only; here the same graph runs on ORT's CPU provider (which widens the
 * few float16 ops it lacks), so these tests check the graph and the scaler, not GPU speed.
 * A trained network is used: a random one amplifies float32 rounding ~1000x through its depth, so
 * float16 gradients of it are noise.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { DEFAULT_MODEL_PATH } from '../../src/assets.ts';
import { decodeImage } from '../../src/data/image.ts';
import { renderScene, synthScene, SHAPE_CLASSES } from '../../src/data/synth.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import type { Yolo9Network } from '../../src/models/yolo9/network.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { LossScaler } from '../../src/train/amp.ts';
import { TrainStep } from '../../src/train/step.ts';
import type { StepResult } from '../../src/train/types.ts';
import type { TrainBatch } from '../../src/data/train-batch.ts';
import { mulberry32 } from '../../src/util/random.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { relL2 } from '../helpers/compare.ts';

const SIZE = 160;
const BATCH = 4;
const MAX_TARGETS = 8;

async function shapesBatch(): Promise<TrainBatch> {
  const images = new Float32Array(BATCH * 3 * SIZE * SIZE);
  const targets = new Float32Array(BATCH * MAX_TARGETS * 5);
  for (let b = 0; b < BATCH; b++) {
    const scene = synthScene(mulberry32(100 + b), {
      imgsz: SIZE, nc: 6, shapes: SHAPE_CLASSES.slice(0, 6), minObjects: 2, maxObjects: 5, sizeRange: [0.15, 0.45], small: false, square: true, empty: false,
    });
    const img = await decodeImage(await renderScene(scene), 'scene');
    for (let p = 0; p < SIZE * SIZE; p++) for (let c = 0; c < 3; c++) images[(b * 3 + c) * SIZE * SIZE + p] = img.data[p * 3 + c]! / 255;
    for (let r = 0; r < MAX_TARGETS; r++) {
      const o = scene.objects[r];
      targets.set(o ? [o.cls, o.x1 / SIZE, o.y1 / SIZE, o.x2 / SIZE, o.y2 / SIZE] : [-1, 0, 0, 0, 0], (b * MAX_TARGETS + r) * 5);
    }
  }
  const t = (data: Float32Array, dims: number[]): HostTensor => ({ dtype: 'float32', dims, data });
  return { images: t(images, [BATCH, 3, SIZE, SIZE]), targets: t(targets, [BATCH, MAX_TARGETS, 5]) };
}

describe('amp: float16 training graph with loss scaling', () => {
  let net: Yolo9Network;
  let full: StepResult;
  let half: StepResult;
  let overflows = 0;
  let finalScale = 0;

  before(async () => {
    net = yolo9Family.create({ size: 't', stateDict: (await loadCheckpointFile(DEFAULT_MODEL_PATH)).stateDict }) as Yolo9Network;
    const batch = await shapesBatch();
    const device = parseDevice('cpu');
    const f32 = await TrainStep.create(yolo9Family, net, { device, batch: BATCH, imgsz: [SIZE, SIZE], maxTargets: MAX_TARGETS });
    full = await f32.run(batch);
    await f32.close();
    const f16 = await TrainStep.create(yolo9Family, net, { device, batch: BATCH, imgsz: [SIZE, SIZE], maxTargets: MAX_TARGETS, amp: true });
    try {
      half = await f16.run(batch);
      while (half.overflow && overflows < 8) {
        overflows++;
        half = await f16.run(batch);
      }
      finalScale = f16.scaler!.scale;
    } finally {
      await f16.close();
    }
  });

  it('computes the loss within float16 accuracy of the float32 step', () => {
    assert.equal(half.overflow, undefined, `still overflowing after ${overflows} halvings`);
    assert.equal(half.numFg, full.numFg);
    for (const k of ['total', 'box', 'dfl', 'cls'] as const) {
      assert.ok(Math.abs(half.loss[k] / full.loss[k] - 1) <= 1e-2, `${k}: ${half.loss[k]} vs float32 ${full.loss[k]}`);
    }
  });

  it('returns unscaled float32 gradients close to the float32 step', () => {
    let worst = 0;
    let all = 0;
    let den = 0;
    for (const [key, g] of full.gradients) {
      const h = half.gradients.get(key)!;
      assert.ok(h instanceof Float32Array && h.length === g.length && h.every(Number.isFinite), key);
      worst = Math.max(worst, relL2(h, g));
      for (let k = 0; k < g.length; k++) {
        all += (h[k]! - g[k]!) ** 2;
        den += g[k]! ** 2;
      }
    }
    assert.ok(Math.sqrt(all / den) <= 2e-2, `global relative L2 error ${Math.sqrt(all / den)} (worst tensor ${worst}, scale ${finalScale})`);
  });

  it('the scaler halves on overflow (and the step reports it) and grows after a run of finite steps', () => {
    const s = new LossScaler({ initScale: 1024, growthInterval: 3 });
    assert.equal(s.unscale([Float32Array.of(1, Infinity)]), false);
    assert.equal(s.scale, 512);
    const g = Float32Array.of(512, -1024);
    assert.equal(s.unscale([g]), true);
    assert.deepEqual(Array.from(g), [1, -2]);
    s.unscale([new Float32Array(2)]);
    s.unscale([new Float32Array(2)]);
    assert.equal(s.scale, 1024);
    assert.equal(s.unscale([Float32Array.of(Number.NaN)]), false);
    assert.equal(s.scale, 512);
  });
});
