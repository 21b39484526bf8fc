/**
 * D-FINE's host matcher: the rectangular assignment against brute force over every injective
 * mapping, scipy's tie choices and output order, and the Hungarian matching of the original's
 * train step (dfinen_ref_train: match_final.img*, from pred_logits_train / pred_boxes_train and the
 * stored targets), the GO union and the denoising slots (dn.positive_idx.*).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { linearSumAssignment } from '../../src/util/lsap.ts';
import { denoisingMatches, denoisingPositiveIdx, hungarianMatch, matchCost, unionMatches, type ImageTargets } from '../../src/models/dfine/matcher.ts';
import { mulberry32 } from '../../src/util/random.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { fixtureTargets } from '../helpers/dfine-targets.ts';
import { fixture } from '../helpers/fixtures.ts';

/** The least total cost over every assignment of the smaller side into the larger. */
function bruteForce(cost: ArrayLike<number>, n: number, m: number): number {
  const small = Math.min(n, m);
  const large = Math.max(n, m);
  const at = (s: number, l: number): number => (n <= m ? cost[s * m + l]! : cost[l * m + s]!);
  let best = Infinity;
  const used = new Array<boolean>(large).fill(false);
  const walk = (s: number, acc: number): void => {
    if (s === small) { best = Math.min(best, acc); return; }
    for (let l = 0; l < large; l++) {
      if (used[l]) continue;
      used[l] = true;
      walk(s + 1, acc + at(s, l));
      used[l] = false;
    }
  };
  walk(0, 0);
  return best;
}

function totalOf(cost: ArrayLike<number>, m: number, a: { rows: number[]; cols: number[] }): number {
  return a.rows.reduce((s, r, k) => s + cost[r * m + a.cols[k]!]!, 0);
}

function checkShape(a: { rows: number[]; cols: number[] }, n: number, m: number): void {
  assert.equal(a.rows.length, Math.min(n, m));
  assert.deepEqual([...a.rows].sort((x, y) => x - y), a.rows, 'rows ascending');
  assert.equal(new Set(a.rows).size, a.rows.length, 'each row once');
  assert.equal(new Set(a.cols).size, a.cols.length, 'each column once');
  for (const r of a.rows) assert.ok(r >= 0 && r < n);
  for (const c of a.cols) assert.ok(c >= 0 && c < m);
}

describe('linearSumAssignment', () => {
  it('finds the brute-force optimum on 600 random matrices up to 6x6, square, wide and tall', () => {
    const rand = mulberry32(7);
    for (let t = 0; t < 600; t++) {
      const n = 1 + Math.floor(rand() * 6);
      const m = 1 + Math.floor(rand() * 6);
      const integer = t % 3 === 0; // small integer costs: many tied optima
      const cost = Float64Array.from({ length: n * m }, () => (integer ? Math.floor(rand() * 4) : rand() * 10 - 3));
      const a = linearSumAssignment(cost, n, m);
      checkShape(a, n, m);
      const want = bruteForce(cost, n, m);
      assert.ok(Math.abs(totalOf(cost, m, a) - want) <= 1e-9 * Math.max(1, Math.abs(want)), `case ${t} (${n}x${m}): ${totalOf(cost, m, a)} vs ${want}`);
    }
  });

  it('takes scipy\'s choices among ties: the identity for a constant matrix, the diagonal for a constant tall one', () => {
    assert.deepEqual(linearSumAssignment(new Float64Array(16).fill(3), 4, 4), { rows: [0, 1, 2, 3], cols: [0, 1, 2, 3] });
    assert.deepEqual(linearSumAssignment(new Float64Array(15).fill(1), 5, 3), { rows: [0, 1, 2], cols: [0, 1, 2] });
    assert.deepEqual(linearSumAssignment(new Float64Array(15).fill(1), 3, 5), { rows: [0, 1, 2], cols: [0, 1, 2] });
    // scipy.optimize.linear_sum_assignment([[1, 1, 0], [0, 1, 1]]) -> ([0, 1], [2, 0])
    assert.deepEqual(linearSumAssignment([1, 1, 0, 0, 1, 1], 2, 3), { rows: [0, 1], cols: [2, 0] });
  });

  it('returns tall results sorted by row with each row\'s column (300 queries x 3 gts)', () => {
    const rand = mulberry32(11);
    const Q = 300;
    const n = 3;
    const cost = Float64Array.from({ length: Q * n }, () => 1 + rand());
    cost[250 * n + 0] = 0; cost[17 * n + 1] = 0; cost[120 * n + 2] = 0;
    assert.deepEqual(linearSumAssignment(cost, Q, n), { rows: [17, 120, 250], cols: [1, 2, 0] });
  });

  it('handles empty sides and refuses NaN', () => {
    assert.deepEqual(linearSumAssignment([], 300, 0), { rows: [], cols: [] });
    assert.deepEqual(linearSumAssignment([], 0, 4), { rows: [], cols: [] });
    assert.throws(() => linearSumAssignment([0, Number.NaN, 1, 2], 2, 2), /NaN/);
  });
});

describe('D-FINE Hungarian matcher on the original\'s train step', () => {
  const st: Map<string, HostTensor> = readSafetensors(new Uint8Array(readFileSync(fixture('dfinen_ref_train.safetensors'))), 'dfine train fixture').tensors;
  const get = (name: string): HostTensor => {
    const t = st.get(name);
    assert.ok(t, `fixture has ${name}`);
    return t;
  };
  const ints = (name: string): number[] => Array.from(get(name).data as BigInt64Array, Number);
  // Targets as the original's on_forward builds them: non-padding rows, boxes / 640 clamped to 0..1.
  const targets: ImageTargets[] = fixtureTargets(get('targets_2x4x5'));
  const B = targets.length;
  const out = { logits: get('pred_logits_train').data as Float32Array, boxes: get('pred_boxes_train').data as Float32Array, batch: B, queries: 300, nc: 80 };

  it('gives match_final.img0/img1 exactly (queries and gts)', () => {
    assert.deepEqual(targets.map((t) => t.labels), [[3, 17], [0, 56, 3]]);
    const got = hungarianMatch(out, targets);
    for (let img = 0; img < B; img++) {
      assert.deepEqual(got[img]!.queries, ints(`match_final.img${img}.query`), `img${img} queries`);
      assert.deepEqual(got[img]!.targets, ints(`match_final.img${img}.target`), `img${img} gts`);
    }
  });

  it('the matched pairs beat every other assignment by a margin above float32 noise', () => {
    for (let img = 0; img < B; img++) {
      const n = targets[img]!.labels.length;
      const cost = matchCost(out, img, targets[img]!);
      const a = linearSumAssignment(cost, 300, n);
      const best = totalOf(cost, n, a);
      // Second best: forbid each matched pair in turn.
      let second = Infinity;
      a.rows.forEach((r, k) => {
        const c = Float64Array.from(cost);
        c[r * n + a.cols[k]!] = 1e9;
        second = Math.min(second, totalOf(c, n, linearSumAssignment(c, 300, n)));
      });
      assert.ok(second - best > 1e-4 * Math.abs(best), `img${img}: best ${best}, runner-up ${second}`);
    }
  });

  it('matches no query for an image without gts', () => {
    const got = hungarianMatch(out, [targets[0]!, { labels: [], boxes: new Float32Array(0) }]);
    assert.deepEqual(got[1], { queries: [], targets: [] });
    assert.deepEqual(got[0]!.queries, ints('match_final.img0.query'));
  });

  it('denoising slots equal dn.positive_idx.* (33 groups of G_max 3)', () => {
    const numGts = targets.map((t) => t.labels.length);
    const dn = denoisingPositiveIdx(numGts);
    assert.equal(dn.groups, 33);
    assert.equal(dn.maxGts, 3);
    for (let img = 0; img < B; img++) assert.deepEqual(dn.positiveIdx[img], ints(`dn.positive_idx.img${img}`));
    const m = denoisingMatches(dn.positiveIdx, numGts, dn.groups);
    assert.deepEqual(m[1]!.targets.slice(0, 7), [0, 1, 2, 0, 1, 2, 0]);
    assert.deepEqual(denoisingPositiveIdx([0, 0]), { positiveIdx: [[], []], groups: 0, maxGts: 0 });
  });
});

describe('GO union of matchings', () => {
  it('gives each query its most frequent gt and keeps pairs seen once', () => {
    const main = [{ queries: [3, 8], targets: [0, 1] }];
    const aux = [
      [{ queries: [3, 9], targets: [0, 1] }],
      [{ queries: [5, 8], targets: [0, 1] }],
      [{ queries: [3, 8], targets: [1, 0] }],
    ];
    // (3,0) x2, (8,1) x2, then once each: (3,1), (5,0), (8,0), (9,1).
    assert.deepEqual(unionMatches(main, aux), [{ queries: [3, 8, 5, 9], targets: [0, 1, 0, 1] }]);
  });

  it('is the main matching when every layer agrees', () => {
    const m = [{ queries: [1, 2], targets: [1, 0] }, { queries: [], targets: [] }];
    assert.deepEqual(unionMatches(m, [m, m]), m);
  });
});
