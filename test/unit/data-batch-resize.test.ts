/**
 * The multi-scale batch resize (src/data/batch-resize.ts) against values of PyTorch's
 * F.interpolate(bilinear, align_corners=False) worked out by hand.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resizeBatchBilinear } from '../../src/data/batch-resize.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';

const batch = (dims: number[], data: Float32Array): HostTensor => ({ dtype: 'float32', dims, data });
const values = (t: HostTensor): number[] => Array.from(t.data as Float32Array);

describe('resizeBatchBilinear', () => {
  it('2x2 -> 4x4: [[1, 2], [3, 4]] gives rows 1 1.25 1.75 2 ... as torch; 1x4 -> 1x2 gives 0.5 2.5', () => {
    const up = resizeBatchBilinear(batch([1, 1, 2, 2], Float32Array.of(1, 2, 3, 4)), 4, 4);
    assert.deepEqual(up.dims, [1, 1, 4, 4]);
    assert.deepEqual(values(up), [1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4]);
    assert.deepEqual(values(resizeBatchBilinear(batch([1, 1, 1, 4], Float32Array.of(0, 1, 2, 3)), 1, 2)), [0.5, 2.5]);
  });
  it('4x4 -> 2x2 averages each 2x2 block (source 2i + 0.5); planes and batches stay apart', () => {
    const out = resizeBatchBilinear(batch([2, 2, 4, 4], Float32Array.from({ length: 2 * 2 * 16 }, (_, i) => i)), 2, 2);
    const plane = (p: number) => [2.5, 4.5, 10.5, 12.5].map((v) => v + 16 * p);
    assert.deepEqual(values(out), [0, 1, 2, 3].flatMap(plane));
  });
  it('the same size returns the batch; bad input is refused', () => {
    const same = batch([1, 1, 2, 2], Float32Array.of(1, 2, 3, 4));
    assert.equal(resizeBatchBilinear(same, 2, 2), same);
    assert.throws(() => resizeBatchBilinear(batch([1, 2, 2], Float32Array.of(1, 2, 3, 4)), 2, 2), /float32 \[B, C, H, W\]/);
    assert.throws(() => resizeBatchBilinear(same, 0, 2), /bad output size/);
  });
});
