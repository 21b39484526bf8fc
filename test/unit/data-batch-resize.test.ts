/**
 * The batch resize of RF-DETR's multi-scale step (src/data/batch-resize.ts) against values of
 * PyTorch's F.interpolate(bilinear, align_corners=False) worked out by hand.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resizeBatchBilinear } from '../../src/data/batch-resize.ts';

describe('resizeBatchBilinear', () => {
  it('2x2 -> 4x4: [[1, 2], [3, 4]] gives rows 1 1.25 1.75 2 ... as torch', () => {
    const out = resizeBatchBilinear(Float32Array.of(1, 2, 3, 4), { batch: 1, channels: 1, inH: 2, inW: 2 }, 4, 4);
    assert.deepEqual([...out], [1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4]);
  });
  it('4x4 -> 2x2 averages each 2x2 block (source 2i + 0.5); planes and batches stay apart', () => {
    const img = Float32Array.from({ length: 2 * 2 * 16 }, (_, i) => i);
    const out = resizeBatchBilinear(img, { batch: 2, channels: 2, inH: 4, inW: 4 }, 2, 2);
    const plane = (p: number) => [2.5, 4.5, 10.5, 12.5].map((v) => v + 16 * p);
    assert.deepEqual([...out], [0, 1, 2, 3].flatMap(plane));
  });
  it('the same size is a copy; bad input is refused', () => {
    const img = Float32Array.of(1, 2, 3, 4);
    const same = resizeBatchBilinear(img, { batch: 1, channels: 1, inH: 2, inW: 2 }, 2, 2);
    assert.deepEqual(same, img);
    assert.notEqual(same, img);
    assert.throws(() => resizeBatchBilinear(img, { batch: 1, channels: 3, inH: 2, inW: 2 }, 2, 2), /do not make/);
    assert.throws(() => resizeBatchBilinear(img, { batch: 1, channels: 1, inH: 2, inW: 2 }, 0, 2), /bad output size/);
  });
});
