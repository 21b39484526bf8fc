/**
 * The train step stays finite while the weights move, for both BatchNorm lowerings (float64
 * statistics, the default, and the float32 two-pass one), and both give the same first step.
 * (Later steps are not compared: from fresh weights, a 1e-7 relative change of the input moves the
 * second step's loss by ~5%, as much as the two lowerings differ.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import type { Yolo9Network } from '../../src/models/yolo9/network.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { Optimizer } from '../../src/train/optimizer.ts';
import { OPTIMIZE_MIN_STEPS, TrainStep, trainOptimizationLevel } from '../../src/train/step.ts';
import { applyRunningStats } from '../../src/graph/state-dict.ts';
import { mulberry32 } from '../../src/util/random.ts';
import type { TrainBatch } from '../../src/data/train-batch.ts';

function batch(seed: number): TrainBatch {
  const rand = mulberry32(seed);
  const images = Float32Array.from({ length: 2 * 3 * 64 * 64 }, () => rand());
  const targets = Float32Array.of(0, 0.1, 0.1, 0.6, 0.7, 0, 0.3, 0.2, 0.9, 0.8);
  return { images: { dtype: 'float32', dims: [2, 3, 64, 64], data: images }, targets: { dtype: 'float32', dims: [2, 1, 5], data: targets } };
}

async function losses(preciseStats: boolean): Promise<number[]> {
  const net = yolo9Family.create({ size: 't', nc: 1 }) as Yolo9Network;
  const step = await TrainStep.create(yolo9Family, net, { device: parseDevice('cpu'), batch: 2, imgsz: [64, 64], maxTargets: 1, preciseStats });
  assert.notEqual(step.sessionCache, 'off', 'train sessions go through the optimised-graph cache');
  const optimizer = Optimizer.create(net.namedTensors(), { lr0: 0.01 });
  const out: number[] = [];
  try {
    for (let k = 0; k < 4; k++) {
      const r = await step.run(batch(k % 2));
      assert.ok(Number.isFinite(r.loss.total), `step ${k}: loss ${r.loss.total}`);
      for (const [key, g] of r.gradients) assert.ok(g.every(Number.isFinite), `step ${k}: non-finite gradient for ${key}`);
      applyRunningStats(net, r.runningStats);
      optimizer.step(r.gradients);
      out.push(r.loss.total);
    }
  } finally {
    await step.close();
  }
  return out;
}

describe('train step over several updates', () => {
  it('float64 and float32 BatchNorm statistics both stay finite and agree', async () => {
    const precise = await losses(true);
    const fast = await losses(false);
    assert.ok(Math.abs(precise[0]! - fast[0]!) <= 1e-5 * Math.abs(precise[0]!), `first step: ${precise[0]} vs ${fast[0]}`);
  });
});

describe('the step graph\'s optimisation level', () => {
  it('is optimised for runs of 300 planned steps or more and for profiled runs only', () => {
    assert.equal(trainOptimizationLevel(OPTIMIZE_MIN_STEPS - 1, false), 'disabled');
    assert.equal(trainOptimizationLevel(OPTIMIZE_MIN_STEPS, false), 'all');
    assert.equal(trainOptimizationLevel(4, true), 'all');
  });

  it('a graph run as built bypasses the optimised-graph cache and gives the optimised step\'s losses', async () => {
    const net = yolo9Family.create({ size: 't', nc: 1 }) as Yolo9Network;
    const b = batch(0);
    const run = async (optimizationLevel: 'all' | 'disabled') => {
      const step = await TrainStep.create(yolo9Family, net, { device: parseDevice('cpu'), batch: 2, imgsz: [64, 64], maxTargets: 1, optimizationLevel });
      try {
        return { cache: step.sessionCache, loss: (await step.run(b)).loss.total };
      } finally {
        await step.close();
      }
    };
    const plain = await run('disabled');
    assert.equal(plain.cache, 'off');
    const optimised = await run('all');
    assert.ok(Math.abs(plain.loss - optimised.loss) <= 1e-5 * Math.abs(optimised.loss), `as built ${plain.loss} vs optimised ${optimised.loss}`);
  });
});
