/**
 * The task-level mask pieces against hand-worked values: run lengths, PyTorch's bilinear taps,
 * OpenCV-style outer contours (largest component, simple chain), Results.masks (materialised on
 * access, summary segments, null when nothing is found), and the original's mask drawing (golden-
 * angle class colours, alpha 114, Pillow's alpha_composite rounding).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeRunsInto, encodeRuns, RunBuilder, runsArea, runsXorCount } from '../../src/data/masks/rle.ts';
import { bilinearTaps, tapRange } from '../../src/data/masks/resize.ts';
import { largestOuterContour } from '../../src/data/masks/contour.ts';
import { Masks } from '../../src/predict/masks.ts';
import { Boxes, Results } from '../../src/predict/results.ts';
import { drawMasks, maskColour } from '../../src/predict/draw-masks.ts';

/** A W x H mask from rows of '.' and '#'. */
function grid(rows: string[]): { px: Uint8Array; w: number; h: number } {
  const h = rows.length, w = rows[0]!.length;
  const px = new Uint8Array(w * h);
  rows.forEach((r, y) => [...r].forEach((c, x) => { px[y * w + x] = c === '#' ? 1 : 0; }));
  return { px, w, h };
}

describe('run lengths', () => {
  it('start with the unset run, alternate, cover every pixel, and decode back', () => {
    const px = Uint8Array.from([1, 1, 0, 0, 0, 1, 0, 1, 1]);
    const runs = encodeRuns(px);
    assert.deepEqual([...runs], [0, 2, 3, 1, 1, 2]);
    assert.equal(runsArea(runs), 5);
    const back = new Uint8Array(9);
    decodeRunsInto(runs, back, 0, 9);
    assert.deepEqual(back, px);
    assert.deepEqual([...encodeRuns(new Uint8Array(4))], [4]);
    assert.throws(() => decodeRunsInto(Int32Array.of(3, 2), new Uint8Array(4), 0, 4), /cover more than 4 pixels/);
  });

  it('RunBuilder joins touching spans; the xor count is the number of differing pixels', () => {
    const b = new RunBuilder(10);
    b.set(2, 4);
    b.set(4, 5);
    b.set(7, 8);
    const runs = b.finish();
    assert.deepEqual([...runs], [2, 3, 2, 1, 2]);
    assert.equal(runsXorCount(runs, encodeRuns(Uint8Array.from([0, 0, 1, 1, 1, 0, 0, 1, 0, 0]))), 0);
    assert.equal(runsXorCount(runs, encodeRuns(Uint8Array.from([1, 0, 1, 0, 1, 0, 0, 1, 1, 0]))), 3);
  });
});

describe('bilinear taps (align_corners=False)', () => {
  it('2 -> 4: sources clamped at 0 and at the last index, weights lambda', () => {
    const t = bilinearTaps(2, 4);
    assert.deepEqual([...t.i0], [0, 0, 0, 1]);
    assert.deepEqual([...t.i1], [1, 1, 1, 1]);
    assert.deepEqual([...t.w1], [0, 0.25, 0.75, 0.25]);
    assert.deepEqual([...t.w0], [1, 0.75, 0.25, 0.75]);
  });
  it('tapRange: the outputs that read a source window', () => {
    const t = bilinearTaps(4, 16);
    // source 2 is read by outputs whose (i + 0.5) / 4 - 0.5 lies in (1, 3)
    assert.deepEqual(tapRange(t, 2, 3), [6, 14]);
  });
});

describe('outer contours', () => {
  it('a filled rectangle: its four corners, down the left side first (OpenCV order)', () => {
    const { px, w, h } = grid(['.....', '.###.', '.###.', '.###.', '.....']);
    assert.deepEqual(largestOuterContour(px, w, h), [1, 1, 1, 3, 3, 3, 3, 1]);
  });
  it('the largest component wins, holes are ignored, an empty mask has none', () => {
    const { px, w, h } = grid(['##......', '##.#####', '...#...#', '...#####']);
    assert.deepEqual(largestOuterContour(px, w, h), [3, 1, 3, 3, 7, 3, 7, 1]);
    assert.deepEqual(largestOuterContour(new Uint8Array(6), 3, 2), []);
  });
});

describe('Results.masks', () => {
  const rect = grid(['....', '.##.', '.##.']);
  const masks = new Masks({ height: 3, width: 4, runs: [encodeRuns(rect.px), encodeRuns(new Uint8Array(12))] });

  it('stores runs and materialises N x H x W bytes on access', () => {
    assert.deepEqual(masks.shape, [2, 3, 4]);
    assert.deepEqual(masks.data.subarray(0, 12), rect.px);
    assert.equal(masks.data.length, 24);
    assert.deepEqual(masks.areas, [4, 0]);
    assert.equal(String(masks), 'Masks(n=2, shape=(2, 3, 4), orig_shape=(3, 4))');
    assert.deepEqual(masks.select([1]).areas, [0]);
  });

  it('xy / xyn: the largest outer contour per mask, (0, 2) for an empty one; summary carries segments', () => {
    assert.deepEqual(masks.xy, [[[1, 1], [1, 2], [2, 2], [2, 1]], []]);
    assert.deepEqual(masks.xyn[0], [[0.25, 1 / 3], [0.25, 2 / 3], [0.5, 2 / 3], [0.5, 1 / 3]]);
    const r = new Results({
      boxes: new Boxes(Float32Array.of(1, 1, 3, 3, 0, 0, 1, 1), Float32Array.of(0.9, 0.5), Float32Array.of(0, 1)),
      masks, names: { 0: 'a', 1: 'b' }, orig_shape: [3, 4],
    });
    assert.deepEqual(r.summary()[0]!.segments, { x: [1, 1, 2, 2], y: [1, 2, 2, 1] });
    assert.deepEqual(r.summary({ normalize: true, decimals: 3 })[0]!.segments, { x: [0.25, 0.25, 0.5, 0.5], y: [0.333, 0.667, 0.667, 0.333] });
    assert.deepEqual(r.summary()[1]!.segments, { x: [], y: [] });
  });

  it('is null when nothing is found, and for detection results', () => {
    const none = new Results({ boxes: new Boxes(new Float32Array(0), new Float32Array(0), new Float32Array(0)), masks: new Masks({ height: 3, width: 4, runs: [] }), names: {}, orig_shape: [3, 4] });
    assert.equal(none.masks, null);
    assert.equal(none.summary().length, 0);
    const det = new Results({ boxes: new Boxes(Float32Array.of(0, 0, 1, 1), Float32Array.of(1), Float32Array.of(0)), names: { 0: 'a' }, orig_shape: [3, 4] });
    assert.equal(det.masks, null);
    assert.equal('segments' in det.summary()[0]!, false);
  });
});

describe('mask drawing', () => {
  it('golden-angle class colours as the original', () => {
    assert.deepEqual(maskColour(0), [204, 61, 61]);
    assert.deepEqual(maskColour(1), [48, 242, 105]);
    assert.deepEqual(maskColour(2), [127, 20, 204]);
    assert.deepEqual(maskColour(80), [20, 140, 204]);
  });

  it('alpha 114 with Pillow rounding: one mask of class 0 on grey 114 is (154,90,90); class 0 then 1 overlapping is (107,158,97)', () => {
    const grey = { width: 3, height: 1, data: new Uint8Array(9).fill(114) };
    const m = new Masks({ height: 1, width: 3, runs: [encodeRuns(Uint8Array.of(1, 1, 0)), encodeRuns(Uint8Array.of(0, 1, 0))] });
    const out = drawMasks(grey, m, [0, 1]);
    assert.deepEqual([...out.data], [154, 90, 90, 107, 158, 97, 114, 114, 114]);
    assert.deepEqual([...grey.data], new Array(9).fill(114), 'the input image is not changed');
  });
});
