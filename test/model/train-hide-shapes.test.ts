/**
 * Hiding the per-image shapes from ONNX Runtime's allocation planner (src/graph/passes/hide-shapes.ts)
 * changes which buffers ORT holds, not what it computes: a yolo9t step with the shapes hidden gives
 * bit-for-bit the losses, gradients and BatchNorm statistics of the same graph with every static
 * shape declared. Both steps open their sessions the way training does (level 'all', the optimised
 * graph reordered like the built one).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { TrainStep } from '../../src/train/step.ts';
import { mulberry32 } from '../../src/util/random.ts';
import type { TrainBatch } from '../../src/data/train-batch.ts';
import type { StepResult } from '../../src/train/types.ts';

const SIZE = 96;

function batch(): TrainBatch {
  const rand = mulberry32(5);
  const images = Float32Array.from({ length: 2 * 3 * SIZE * SIZE }, () => rand());
  const targets = Float32Array.of(0, 0.1, 0.1, 0.6, 0.7, 1, 0.5, 0.5, 0.9, 0.8, 0, 0.3, 0.2, 0.9, 0.8, -1, 0, 0, 0, 0);
  return { images: { dtype: 'float32', dims: [2, 3, SIZE, SIZE], data: images }, targets: { dtype: 'float32', dims: [2, 2, 5], data: targets } };
}

async function step(hideShapes: boolean, level: 'disabled' | 'all' = 'disabled'): Promise<StepResult> {
  const net = yolo9Family.create({ size: 't', nc: 2 });
  const s = await TrainStep.create(yolo9Family, net, { device: parseDevice('cpu'), threads: 1, batch: 2, imgsz: [SIZE, SIZE], maxTargets: 2, hideShapes, optimizationLevel: level });
  try {
    return await s.run(batch());
  } finally {
    await s.close();
  }
}

describe('hiding per-image shapes from the allocation planner', () => {
  it('gives bit-identical losses, gradients and running statistics', async () => {
    const shaped = await step(false);
    const hidden = await step(true);
    assert.deepEqual(hidden.loss, shaped.loss);
    assert.ok(shaped.numFg > 0, 'the batch assigns foreground anchors');
    assert.deepEqual([...hidden.gradients.keys()], [...shaped.gradients.keys()]);
    for (const [key, g] of shaped.gradients) {
      const h = hidden.gradients.get(key)!;
      const differing = g.reduce((n, v, k) => n + (Object.is(v, h[k]) ? 0 : 1), 0);
      assert.equal(differing, 0, `${key}: ${differing} of ${g.length} gradient values differ`);
    }
    for (const [key, v] of shaped.runningStats) assert.deepEqual(hidden.runningStats.get(key), v, key);
  });
});
