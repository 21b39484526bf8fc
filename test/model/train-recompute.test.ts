/**
 * Recomputing cheap forward values in the backward (src/graph/autodiff/recompute.ts) changes where
 * values live, not what they are: a yolo9t step with it gives bit-for-bit the losses, gradients and
 * BatchNorm statistics of the graph that keeps every value, and its graph keeps less for the backward.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { TrainStep } from '../../src/train/step.ts';
import { buildTrainGraph } from '../../src/train/graph.ts';
import { probeShapes } from '../../src/graph/autodiff/shapes.ts';
import { savedForBackward } from '../../src/graph/autodiff/saved.ts';
import { zeros, type HostTensor } from '../../src/graph/tensor.ts';
import { mulberry32 } from '../../src/util/random.ts';
import type { TrainBatch } from '../../src/data/train-batch.ts';
import type { StepResult } from '../../src/train/types.ts';

const SIZE = 96;

function batch(): TrainBatch {
  const rand = mulberry32(3);
  const images = Float32Array.from({ length: 2 * 3 * SIZE * SIZE }, () => rand());
  const targets = Float32Array.of(0, 0.1, 0.1, 0.6, 0.7, 1, 0.5, 0.5, 0.9, 0.8, 0, 0.3, 0.2, 0.9, 0.8, -1, 0, 0, 0, 0);
  return { images: { dtype: 'float32', dims: [2, 3, SIZE, SIZE], data: images }, targets: { dtype: 'float32', dims: [2, 2, 5], data: targets } };
}

async function step(recomputeCheap: boolean): Promise<StepResult> {
  const net = yolo9Family.create({ size: 't', nc: 2 });
  const s = await TrainStep.create(yolo9Family, net, { device: parseDevice('cpu'), threads: 1, batch: 2, imgsz: [SIZE, SIZE], maxTargets: 2, recomputeCheap });
  try {
    return await s.run(batch());
  } finally {
    await s.close();
  }
}

async function savedBytes(recomputeCheap: boolean): Promise<number> {
  // Static shapes: the accounting reads every value's size (hiding them changes no node).
  const tg = await buildTrainGraph(yolo9Family, yolo9Family.create({ size: 't', nc: 2 }), { batch: 1, height: SIZE, width: SIZE, maxTargets: 2, recomputeCheap, hideShapes: false });
  const feeds: Record<string, HostTensor> = {};
  for (const v of tg.graph.inputs) feeds[v.name] = zeros(v.dtype, v.shape.map(Number));
  return savedForBackward(tg.graph, await probeShapes(tg.graph, feeds)).reduce((n, v) => n + v.bytes, 0);
}

describe('recomputing cheap forward values in the backward', () => {
  it('gives bit-identical losses, gradients and running statistics', async () => {
    const kept = await step(false);
    const recomputed = await step(true);
    assert.deepEqual(recomputed.loss, kept.loss);
    assert.equal(recomputed.numFg, kept.numFg);
    assert.ok(kept.numFg > 0, 'the batch assigns foreground anchors, so the box losses have gradients');
    assert.deepEqual([...recomputed.gradients.keys()], [...kept.gradients.keys()]);
    for (const [key, g] of kept.gradients) {
      const r = recomputed.gradients.get(key)!;
      const differing = g.reduce((n, v, k) => n + (Object.is(v, r[k]) ? 0 : 1), 0);
      assert.equal(differing, 0, `${key}: ${differing} of ${g.length} gradient values differ`);
    }
    for (const [key, v] of kept.runningStats) assert.deepEqual(recomputed.runningStats.get(key), v, key);
  });

  it('keeps at most half the forward bytes for the backward', async () => {
    const kept = await savedBytes(false);
    const recomputed = await savedBytes(true);
    assert.ok(recomputed <= 0.5 * kept, `saved for backward: ${recomputed} bytes with recompute, ${kept} without`);
  });
});
