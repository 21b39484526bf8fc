import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { postprocessDetections, type Detections, type PostprocessOptions } from '../../src/predict/postprocess.ts';

type Box = [number, number, number, number];
interface Anchor { box: Box; scores: Record<number, number> }

/** Builds a `[4+nc, A]` head output (class-major) from per-anchor boxes and scores, after `offset` spare floats. */
function headOutput(anchors: Anchor[], nc: number, offset = 0): Float32Array {
  const A = anchors.length;
  const out = new Float32Array(offset + (4 + nc) * A);
  anchors.forEach(({ box, scores }, a) => {
    for (let k = 0; k < 4; k++) out[offset + k * A + a] = box[k]!;
    for (const [c, s] of Object.entries(scores)) out[offset + (4 + Number(c)) * A + a] = s;
  });
  return out;
}

const base: PostprocessOptions = { conf: 0.25, iou: 0.45, maxDet: 300, ratio: 1, origWidth: 1000, origHeight: 1000 };

function run(anchors: Anchor[], nc: number, opts: Partial<PostprocessOptions> = {}): Detections {
  return postprocessDetections(headOutput(anchors, nc), 0, anchors.length, nc, { ...base, ...opts });
}

const rows = (d: Detections): { box: number[]; conf: number; cls: number }[] =>
  Array.from(d.conf, (conf, i) => ({ box: Array.from(d.xyxy.subarray(i * 4, i * 4 + 4)), conf, cls: d.cls[i]! }));

/** Boxes far apart from each other (no overlap), one per index. */
const apart = (i: number): Box => [i * 50, 0, i * 50 + 40, 40];

describe('candidate selection', () => {
  it('keeps scores strictly above conf, compared in float32', () => {
    const d = run([
      { box: apart(0), scores: { 0: 0.5 } },
      { box: apart(1), scores: { 0: 0.50001 } },
      { box: apart(2), scores: { 0: 0.49 } },
    ], 1, { conf: 0.5 });
    assert.deepEqual(rows(d).map((r) => r.box[0]), [50]);
    // float32(0.3) is slightly above 0.3 in double, but the reference compares in float32.
    assert.equal(run([{ box: apart(0), scores: { 0: 0.3 } }], 1, { conf: 0.3 }).conf.length, 0);
  });

  it('is multi-label: one anchor can yield several classes', () => {
    const d = run([{ box: [10, 10, 50, 50], scores: { 0: 0.9, 2: 0.6, 1: 0.2 } }], 3);
    assert.deepEqual(rows(d), [
      { box: [10, 10, 50, 50], conf: Math.fround(0.9), cls: 0 },
      { box: [10, 10, 50, 50], conf: Math.fround(0.6), cls: 2 },
    ]);
  });

  it('processes an image inside a batch output at an offset', () => {
    const anchors: Anchor[] = [{ box: [1, 2, 3, 4], scores: { 1: 0.7 } }, { box: apart(3), scores: { 0: 0.8 } }];
    const offset = 6 * 2; // one preceding image of [4+2, 2]
    const out = headOutput(anchors, 2, offset).fill(0.99, 0, offset);
    const d = postprocessDetections(out, offset, 2, 2, base);
    assert.deepEqual(rows(d).map((r) => [r.cls, r.conf]), [[0, Math.fround(0.8)], [1, Math.fround(0.7)]]);
    assert.throws(() => postprocessDetections(out, offset + 1, 2, 2, base), RangeError);
  });
});

describe('coordinates', () => {
  it('divides by the ratio and clamps to the original image', () => {
    const d = run([
      { box: [-20, -10, 100, 60], scores: { 0: 0.9 } },
      { box: [300, 100, 900, 500], scores: { 0: 0.8 } },
    ], 1, { ratio: 0.5, origWidth: 400, origHeight: 300 });
    assert.deepEqual(rows(d).map((r) => r.box), [[0, 0, 200, 120]]);
    assert.equal(d.conf.length, 1);
  });

  it('keeps boxes that end exactly on the border and drops degenerate ones', () => {
    const d = run([
      { box: [900, 900, 1000, 1000], scores: { 0: 0.9 } },
      { box: [10, 10, 10, 50], scores: { 0: 0.8 } },
      { box: [20, 60, 50, 59], scores: { 0: 0.7 } },
    ], 1);
    assert.deepEqual(rows(d).map((r) => r.box), [[900, 900, 1000, 1000]]);
  });
});

describe('NMS', () => {
  const a: Box = [0, 0, 100, 100];
  const b: Box = [10, 0, 110, 100]; // IoU with a = 9000/11000 ~ 0.82

  it('is class-aware: overlapping boxes of different classes both survive', () => {
    const d = run([{ box: a, scores: { 0: 0.9 } }, { box: b, scores: { 1: 0.8 } }], 2);
    assert.deepEqual(rows(d).map((r) => r.cls), [0, 1]);
    const same = run([{ box: a, scores: { 0: 0.8 } }, { box: b, scores: { 0: 0.9 } }], 2);
    assert.deepEqual(rows(same).map((r) => r.box), [b]);
  });

  it('suppresses only when IoU is strictly above the threshold', () => {
    // inter = 20*10 = 200, union = 300 + 300 - 200 = 400 -> IoU exactly 0.5
    const anchors: Anchor[] = [{ box: [0, 0, 30, 10], scores: { 0: 0.9 } }, { box: [10, 0, 40, 10], scores: { 0: 0.8 } }];
    assert.equal(run(anchors, 1, { iou: 0.5 }).conf.length, 2);
    assert.equal(run(anchors, 1, { iou: 0.4999 }).conf.length, 1);
  });

  it('is greedy: a suppressed box does not suppress others', () => {
    // IoU(x,y) = 0.6 and IoU(y,z) = 0.6, IoU(x,z) = 1/3: y goes, so z survives.
    const d = run([
      { box: [0, 0, 100, 10], scores: { 0: 0.9 } },
      { box: [25, 0, 125, 10], scores: { 0: 0.8 } },
      { box: [50, 0, 150, 10], scores: { 0: 0.7 } },
    ], 1, { iou: 0.5 });
    assert.deepEqual(rows(d).map((r) => r.box[0]), [0, 50]);
  });

  it('orders results by score and breaks ties by anchor', () => {
    const d = run([
      { box: apart(0), scores: { 1: 0.5 } },
      { box: apart(1), scores: { 0: 0.5, 1: 0.9 } },
      { box: apart(2), scores: { 0: 0.7 } },
    ], 2);
    assert.deepEqual(rows(d).map((r) => [r.box[0], r.cls, r.conf]), [
      [50, 1, Math.fround(0.9)], [100, 0, Math.fround(0.7)], [0, 1, 0.5], [50, 0, 0.5],
    ]);
  });
});

describe('max_det and classes', () => {
  const six: Anchor[] = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4].map((s, i) => ({ box: apart(i), scores: { [i < 3 ? 0 : 1]: s } }));

  it('keeps the top max_det by score', () => {
    const d = run(six, 2, { maxDet: 4 });
    assert.deepEqual(Array.from(d.conf), [0.9, 0.8, 0.7, 0.6].map(Math.fround));
    assert.equal(run(six, 2, { maxDet: 0 }).conf.length, 0);
  });

  it('filters classes after NMS, then applies max_det to what is left', () => {
    const d = run(six, 2, { maxDet: 2, classes: [1] });
    assert.deepEqual(rows(d).map((r) => [r.cls, r.conf]), [[1, Math.fround(0.6)], [1, Math.fround(0.5)]]);
    assert.equal(run(six, 2, { classes: [5] }).conf.length, 0);
    assert.equal(run(six, 2, { classes: [0, 1] }).conf.length, 6);
    // a box of a filtered-out class still suppresses nothing across classes (NMS is per class anyway)
    const overlap = run([{ box: [0, 0, 100, 100], scores: { 0: 0.9 } }, { box: [5, 0, 105, 100], scores: { 1: 0.5 } }], 2, { classes: [1] });
    assert.deepEqual(rows(overlap).map((r) => r.cls), [1]);
  });

  it('with classes, the family postprocess runs with max(max_det, 300)', () => {
    // k high-scoring class-0 boxes and one lower class-1 box ranked k+1.
    const scene = (k: number): Anchor[] => Array.from({ length: k + 1 }, (_, i) => ({
      box: [(i % 20) * 50, Math.floor(i / 20) * 50, (i % 20) * 50 + 40, Math.floor(i / 20) * 50 + 40] as Box,
      scores: (i < k ? { 0: 0.9 } : { 1: 0.3 }) as Record<number, number>,
    }));
    assert.deepEqual(Array.from(run(scene(299), 2, { maxDet: 1, classes: [1] }).cls), [1]);
    assert.deepEqual(Array.from(run(scene(299), 2, { maxDet: 1 }).cls), [0]);
    // ranked 301st it falls outside the 300 kept before filtering (the reference behaves the same)
    assert.equal(run(scene(300), 2, { maxDet: 1, classes: [1] }).conf.length, 0);
    assert.deepEqual(Array.from(run(scene(300), 2, { maxDet: 400, classes: [1] }).cls), [1]);
  });

  it('caps candidates at max(max_det, 30000) by score before NMS', () => {
    // 30000 identical boxes with higher scores and one lone, lowest-scored box: the cap drops the lone one.
    const n = 30000;
    const anchors: Anchor[] = Array.from({ length: n }, (_, i) => ({ box: [0, 0, 10, 10] as Box, scores: { 0: 0.9 - i * 1e-6 } }));
    anchors.push({ box: [500, 500, 510, 510], scores: { 0: 0.3 } });
    assert.equal(run(anchors, 1).conf.length, 1);
    anchors.pop();
    anchors.push({ box: [500, 500, 510, 510], scores: { 0: 0.95 } });
    assert.equal(run(anchors, 1).conf.length, 2);
  });
});

/** Straightforward implementation of the reference algorithm, for randomized comparison. */
function naive(out: Float32Array, A: number, nc: number, o: PostprocessOptions): { box: number[]; conf: number; cls: number }[] {
  const f = Math.fround;
  const r = f(o.ratio);
  type C = { a: number; c: number; s: number; box: number[] };
  let cands: C[] = [];
  for (let a = 0; a < A; a++) for (let c = 0; c < nc; c++) {
    const s = out[(4 + c) * A + a]!;
    if (s > f(o.conf)) cands.push({ a, c, s, box: [0, 1, 2, 3].map((k) => f(out[k * A + a]! / r)) });
  }
  cands = cands.map((x) => ({ ...x, box: [Math.min(Math.max(x.box[0]!, 0), o.origWidth), Math.min(Math.max(x.box[1]!, 0), o.origHeight), Math.min(Math.max(x.box[2]!, 0), o.origWidth), Math.min(Math.max(x.box[3]!, 0), o.origHeight)] }))
    .filter((x) => x.box[2]! > x.box[0]! && x.box[3]! > x.box[1]!);
  cands.sort((p, q) => q.s - p.s || p.a - q.a || p.c - q.c);
  const area = (b: number[]): number => f(f(b[2]! - b[0]!) * f(b[3]! - b[1]!));
  const kept: C[] = [];
  const dead = new Set<C>();
  for (const x of cands) {
    if (dead.has(x)) continue;
    kept.push(x);
    for (const y of cands) {
      if (y === x || y.c !== x.c || dead.has(y) || kept.includes(y)) continue;
      const w = Math.max(0, f(Math.min(x.box[2]!, y.box[2]!) - Math.max(x.box[0]!, y.box[0]!)));
      const h = Math.max(0, f(Math.min(x.box[3]!, y.box[3]!) - Math.max(x.box[1]!, y.box[1]!)));
      const inter = f(w * h);
      if (f(inter / f(f(area(x.box) + area(y.box)) - inter)) > o.iou) dead.add(y);
    }
  }
  return kept.slice(0, o.maxDet).map((x) => ({ box: x.box, conf: x.s, cls: x.c }));
}

describe('randomized comparison with a naive implementation', () => {
  it('matches when the best candidates are all duplicates and the walk must go past the first few times max_det', () => {
    const A = 400, nc = 1;
    const out = new Float32Array((4 + nc) * A);
    for (let a = 0; a < A; a++) {
      // 300 copies of one box with high scores, then 100 separate boxes with low ones.
      const x = a < 300 ? 10 : 20 * (a - 300), y = a < 300 ? 10 : 500;
      out[a] = x; out[A + a] = y; out[2 * A + a] = x + 15; out[3 * A + a] = y + 15;
      out[4 * A + a] = a < 300 ? 0.5 + (a % 37) / 100 : 0.2 + (a % 11) / 100;
    }
    const o: PostprocessOptions = { conf: 0.1, iou: 0.5, maxDet: 3, ratio: 1, origWidth: 3000, origHeight: 3000 };
    const got = rows(postprocessDetections(out, 0, A, nc, o));
    assert.equal(got.length, 3);
    assert.deepEqual(got, naive(out, A, nc, o));
  });

  it('matches on dense random outputs', () => {
    let s = 12345;
    const rnd = (): number => { s = (s * 1664525 + 1013904223) >>> 0; return s / 2 ** 32; };
    for (let trial = 0; trial < 5; trial++) {
      const A = 400, nc = 4;
      const out = new Float32Array((4 + nc) * A);
      for (let a = 0; a < A; a++) {
        const cx = rnd() * 700 - 30, cy = rnd() * 500 - 30, w = rnd() * 120, h = rnd() * 120;
        out[a] = cx - w / 2; out[A + a] = cy - h / 2; out[2 * A + a] = cx + w / 2; out[3 * A + a] = cy + h / 2;
      }
      // quantised scores so that ties happen
      for (let i = 4 * A; i < out.length; i++) out[i] = Math.round(rnd() ** 3 * 20) / 20;
      // max_det below and above the survivors: the walk stops early, or runs out of candidates.
      for (const maxDet of [7, 100, 5000]) {
        const o: PostprocessOptions = { conf: 0.2, iou: 0.5, maxDet, ratio: 0.9, origWidth: 600, origHeight: 420 };
        assert.deepEqual(rows(postprocessDetections(out, 0, A, nc, o)), naive(out, A, nc, o));
      }
    }
  });
});
