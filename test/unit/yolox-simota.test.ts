/**
 * SimOTA (src/models/yolox/simota.ts) on hand-built predictions, for what the train fixture never
 * exercises: dynamic k > 1, an anchor two gts claim (given to the cheapest gt of all, even one that
 * did not pick it), the strict centre-prior edge, and images without labels. Expected values are
 * worked out in the comments from yolox.md 5.4, not by running the implementation.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { anchorGrid, simota, type GtBox } from '../../src/models/yolox/simota.ts';

const NC = 2;
const grid = anchorGrid(64, 64, [8, 16, 32]); // 64 + 16 + 4 = 84 anchors

/** Index of the anchor at cell (gx, gy) of stride s. */
function anchor(s: number, gx: number, gy: number): number {
  let base = 0;
  for (const t of [8, 16, 32]) {
    if (t === s) return base + gy * (64 / s) + gx;
    base += (64 / t) ** 2;
  }
  throw new Error('stride');
}

/**
 * Predictions: every anchor a far-away 4x4 box (IoU 0 with any gt), objectness logit 40 (sigmoid 1)
 * and class logits 0; `set` overrides chosen anchors.
 */
function predictions(set: Record<number, { box?: [number, number, number, number]; cls?: [number, number] }>): Float32Array {
  const rows = new Float32Array(grid.count * (5 + NC));
  for (let a = 0; a < grid.count; a++) {
    const o = a * (5 + NC);
    rows.set([1000, 1000, 4, 4, 40, 0, 0], o);
    const s = set[a];
    if (s?.box) rows.set(s.box, o);
    if (s?.cls) rows.set(s.cls, o + 5);
  }
  return rows;
}

const run = (rows: Float32Array, gts: GtBox[]) => simota({ rows, offset: 0, stride: 5 + NC, nc: NC }, grid, gts);

describe('SimOTA', () => {
  it('counts candidates with the strict centre prior of 1.5 strides', () => {
    // gt centre (20, 20): stride 8 centres 12, 20, 28 are within 12 px (4 is 16 away): 3 x 3;
    // stride 16 centres 8, 24, 40 are within 24 px: 3 x 3; stride 32 centres 16, 48 within 48: 2 x 2.
    const r = run(predictions({}), [{ cls: 0, cx: 20, cy: 20, w: 16, h: 16 }]);
    assert.equal(r.candidates, 22);
    // gt centre (16, 20): stride-8 x centres 4 and 28 are exactly 12 px away, which the strict test
    // excludes (x: 12, 20; y: 12, 20, 28); stride 16 x centre 40 is exactly 24 away (x: 8, 24; y: 8,
    // 24, 40); stride 32 keeps all 2 x 2.
    assert.equal(run(predictions({}), [{ cls: 0, cx: 16, cy: 20, w: 16, h: 16 }]).candidates, 2 * 3 + 2 * 3 + 4);
  });

  it('dynamic k > 1: k = int(sum of the 10 best IoUs), the k cheapest candidates', () => {
    // Same-height boxes on the gt's row: IoU = (16 - d) / (16 + d) for a horizontal offset d.
    // d = 0 -> 1, d = 2 -> 0.7778, d = 4 -> 0.6; sum 2.378 -> k = 2: the IoU 1 and 0.7778 anchors.
    const gt: GtBox = { cls: 0, cx: 20, cy: 20, w: 16, h: 16 };
    const [a1, a2, a3] = [anchor(8, 2, 2), anchor(16, 1, 1), anchor(8, 1, 2)];
    const rows = predictions({ [a1]: { box: [20, 20, 16, 16] }, [a2]: { box: [22, 20, 16, 16] }, [a3]: { box: [24, 20, 16, 16] } });
    const r = run(rows, [gt]);
    assert.deepEqual(r.dynamicK, [2]);
    assert.deepEqual(r.fgAnchors, [a1, a2].sort((x, y) => x - y));
    assert.deepEqual(r.matchedGt, [0, 0]);
    const iouOf = new Map(r.fgAnchors.map((a, k) => [a, r.predIou[k]!]));
    assert.ok(Math.abs(iouOf.get(a1)! - 1) < 1e-6);
    assert.ok(Math.abs(iouOf.get(a2)! - 14 / 18) < 1e-6);
  });

  it('an anchor several gts claim goes to the cheapest gt of all, even one that did not pick it', () => {
    // Three identical gt boxes: A and B class 0, C class 1. Anchor X predicts a box with IoU 0.6
    // (iou cost 3 * -ln 0.6 = 1.53), anchor Y the gt box itself (IoU 1, cost 0).
    // Class probabilities p = sqrt(sigmoid(logit)) (objectness is 1):
    //   X: p0 = 0.3, p1 = 0.6 -> cls cost class 0 = -ln .3 - ln .4 = 2.12, class 1 = -ln .6 - ln .7 = 0.87
    //   Y: p0 = 0.01, p1 = 0.9 -> class 0 = -ln .01 - ln .1 = 6.91,      class 1 = -ln .9 - ln .99 = 0.12
    // A, B (class 0): X costs 2.12 + 1.53 = 3.65, Y 6.91 -> both pick X (k = int(1 + 0.6) = 1).
    // C (class 1): X costs 0.87 + 1.53 = 2.40, Y 0.12 -> picks Y.
    // X is contested (A, B): argmin over all gts of its cost is C (2.40 < 3.65), so X -> C; Y -> C.
    const logit = (p: number): number => Math.log((p * p) / (1 - p * p)); // sigmoid(logit) = p^2
    const [X, Y] = [anchor(8, 1, 2), anchor(8, 2, 2)];
    const rows = predictions({
      [X]: { box: [24, 20, 16, 16], cls: [logit(0.3), logit(0.6)] },
      [Y]: { box: [20, 20, 16, 16], cls: [logit(0.01), logit(0.9)] },
    });
    const box = { cx: 20, cy: 20, w: 16, h: 16 };
    const r = run(rows, [{ cls: 0, ...box }, { cls: 0, ...box }, { cls: 1, ...box }]);
    assert.deepEqual(r.dynamicK, [1, 1, 1]);
    assert.deepEqual(r.fgAnchors, [X, Y]);
    assert.deepEqual(r.matchedGt, [2, 2]);
    // With C's class swapped to 0 too, X's three costs tie and the lowest gt index (A) takes it.
    const tie = run(rows, [{ cls: 0, ...box }, { cls: 0, ...box }, { cls: 0, ...box }]);
    assert.deepEqual(tie.fgAnchors, [X]);
    assert.deepEqual(tie.matchedGt, [0]);
  });

  it('an image without labels has no candidates and no foreground', () => {
    const r = run(predictions({}), []);
    assert.equal(r.candidates, 0);
    assert.deepEqual(r.fgAnchors, []);
  });
});
