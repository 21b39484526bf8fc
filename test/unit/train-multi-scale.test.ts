/**
 * Multi-scale draws (src/train/multi-scale.ts): a side per batch or per optimizer step from the
 * family's list, imgsz outside the schedule's epochs (the batch resize: data-batch-resize.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TrainBatch } from '../../src/data/train-batch.ts';
import type { DetectionNetwork, MultiScale } from '../../src/models/registry.ts';
import { MultiScaleSampler } from '../../src/train/multi-scale.ts';

const network = { nc: 1 } as DetectionNetwork;
const batch = (side: number): TrainBatch => ({
  images: { dtype: 'float32', dims: [1, 3, side, side], data: new Float32Array(3 * side * side).fill(0.5) },
  targets: { dtype: 'float32', dims: [1, 1, 5], data: Float32Array.of(0, 0.1, 0.1, 0.5, 0.5) },
});
const option = (cfg: Record<string, unknown>) => (name: string): unknown => cfg[name];

describe('multi-scale draws', () => {
  const ms = (per: 'batch' | 'step'): MultiScale => ({ sizes: () => [64, 96, 128], per, resize: 'bilinear', schedule: { stopRatio: 'aug_stop_epoch_ratio' } });

  it('per batch: a new side every batch, covering the list; targets unchanged; imgsz from the stop epoch on', () => {
    const s = new MultiScaleSampler(ms('batch'), { imgsz: 96, seed: 0, epochs: 4 }, network, option({ aug_stop_epoch_ratio: 0.5 }));
    const sides = Array.from({ length: 60 }, () => s.apply(batch(96), 0, false, 0).images.dims[2]);
    assert.deepEqual([...new Set(sides)].sort((a, b) => a! - b!), [64, 96, 128]);
    const b = s.apply(batch(96), 1, false, 0);
    assert.deepEqual(Array.from(b.targets.data as Float32Array), Array.from(Float32Array.of(0, 0.1, 0.1, 0.5, 0.5)));
    for (let k = 0; k < 10; k++) assert.equal(s.apply(batch(96), 2, true, k).images.dims[2], 96);
    assert.deepEqual(s.distinct, [96, 64, 128]);
    assert.equal([...s.batches.values()].reduce((a, n) => a + n, 0), 71);
  });

  it('per step: the micro-batches after a step\'s first keep its side', () => {
    const s = new MultiScaleSampler(ms('step'), { imgsz: 96, seed: 3, epochs: 1 }, network, option({ aug_stop_epoch_ratio: 1 }));
    const seen = new Set<number>();
    for (let step = 0; step < 30; step++) {
      const first = s.apply(batch(96), 0, true, step).images.dims[2]!;
      seen.add(first);
      for (let m = 0; m < 3; m++) assert.equal(s.apply(batch(96), 0, false, 0).images.dims[2], first);
    }
    assert.equal(seen.size, 3);
  });

  it('per step with the family\'s stepSide: each step\'s side is stepSide(step index), its micro-batches keep it', () => {
    const s = new MultiScaleSampler({ ...ms('step'), stepSide: (step) => [64, 96, 128][step % 3]! }, { imgsz: 96, seed: 3, epochs: 1 }, network, option({ aug_stop_epoch_ratio: 1 }));
    for (let step = 0; step < 6; step++) {
      assert.equal(s.apply(batch(96), 0, true, step).images.dims[2], [64, 96, 128][step % 3]);
      assert.equal(s.apply(batch(96), 0, false, step).images.dims[2], [64, 96, 128][step % 3]);
    }
  });
});
