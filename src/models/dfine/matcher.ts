/**
 * D-FINE's Hungarian matcher on the host: per image, the cost of query q for gt g is
 * 5 L1(cxcywh) + 2 focal class cost (alpha 0.25, gamma 2) - 2 GIoU, NaN -> 1, and the one-to-one
 * assignment of least total cost (util/lsap.ts, scipy's semantics). The cost is evaluated in float32
 * steps as PyTorch computes it, so near-ties resolve as the original's do. Also the cross-layer
 * union of matchings (GO, `_get_go_indices`) and the denoising matches.
 */
import { linearSumAssignment } from '../../util/lsap.ts';
import { cxcywhToXyxy as toXyxy, giou, type ImageTargets, type Match, type MatchInput } from '../detr/matching.ts';

export type { ImageTargets, Match, MatchInput } from '../detr/matching.ts';

export const MATCH_COST = { class: 2, bbox: 5, giou: 2 } as const;
export const MATCH_FOCAL = { alpha: 0.25, gamma: 2 } as const;

const f = Math.fround;

/** The `[Q, n]` cost matrix of image `img` against its gts. */
export function matchCost(out: MatchInput, img: number, gt: ImageTargets): Float64Array {
  const { queries: Q, nc } = out;
  const n = gt.labels.length;
  const { alpha, gamma } = MATCH_FOCAL;
  const cost = new Float64Array(Q * n);
  const gtXyxy = Array.from({ length: n }, (_, g) => toXyxy(gt.boxes, g * 4));
  for (let q = 0; q < Q; q++) {
    const row = img * Q + q;
    const pb = out.boxes.subarray(row * 4, row * 4 + 4);
    const pXyxy = toXyxy(pb, 0);
    for (let g = 0; g < n; g++) {
      const p = f(1 / (1 + Math.exp(-out.logits[row * nc + gt.labels[g]!]!)));
      const neg = f(f(f((1 - alpha) * f(p ** gamma))) * -f(Math.log(f(f(1 - p) + 1e-8))));
      const pos = f(f(alpha * f(f(1 - p) ** gamma)) * -f(Math.log(f(p + 1e-8))));
      const cls = f(pos - neg);
      let l1 = 0;
      for (let k = 0; k < 4; k++) l1 = f(l1 + Math.abs(f(pb[k]! - gt.boxes[g * 4 + k]!)));
      const c = f(f(f(MATCH_COST.bbox * l1) + f(MATCH_COST.class * cls)) + f(MATCH_COST.giou * -giou(pXyxy, gtXyxy[g]!)));
      cost[q * n + g] = Number.isNaN(c) ? 1 : c;
    }
  }
  return cost;
}

/** The Hungarian matching of every image (queries ascending, as the original returns them). */
export function hungarianMatch(out: MatchInput, targets: readonly ImageTargets[]): Match[] {
  if (targets.length !== out.batch) throw new Error(`hungarianMatch: ${targets.length} target sets for a batch of ${out.batch}`);
  return targets.map((gt, img) => {
    const a = linearSumAssignment(matchCost(out, img, gt), out.queries, gt.labels.length);
    return { queries: a.rows, targets: a.cols };
  });
}

/**
 * The GO union of the main matching with the aux ones, per image: every distinct (query, gt) pair is
 * counted over all matchings, pairs are visited by descending count (ties: ascending query, then gt),
 * and each query keeps the gt of its first visit. The result is in visit order.
 */
export function unionMatches(main: readonly Match[], aux: ReadonlyArray<readonly Match[]>): Match[] {
  return main.map((m, img) => {
    const counts = new Map<string, { q: number; t: number; n: number }>();
    for (const set of [m, ...aux.map((a) => a[img]!)]) {
      set.queries.forEach((q, k) => {
        const t = set.targets[k]!;
        const key = `${q},${t}`;
        const e = counts.get(key);
        if (e) e.n++; else counts.set(key, { q, t, n: 1 });
      });
    }
    const pairs = [...counts.values()].sort((a, b) => b.n - a.n || a.q - b.q || a.t - b.t);
    const seen = new Set<number>();
    const out: Match = { queries: [], targets: [] };
    for (const p of pairs) {
      if (seen.has(p.q)) continue;
      seen.add(p.q);
      out.queries.push(p.q);
      out.targets.push(p.t);
    }
    return out;
  });
}

/**
 * Denoising matches (`get_cdn_matched_indices`): the positive slots of each image paired with its
 * gts 0..n-1 repeated once per group. `positiveIdx[b]` holds the slot positions, group-major.
 */
export function denoisingMatches(positiveIdx: ReadonlyArray<readonly number[]>, numGts: readonly number[], groups: number): Match[] {
  return numGts.map((n, img) => {
    const queries = [...(positiveIdx[img] ?? [])];
    if (queries.length !== n * groups) throw new Error(`denoisingMatches: image ${img} has ${queries.length} positive slots for ${n} gts x ${groups} groups`);
    return { queries, targets: queries.map((_, k) => k % Math.max(n, 1)) };
  });
}

/** Positive denoising slots: group g holds image b's gts at 2 G_max g + 0..n_b-1. */
export function denoisingPositiveIdx(numGts: readonly number[]): { positiveIdx: number[][]; groups: number; maxGts: number } {
  const maxGts = Math.max(0, ...numGts);
  if (maxGts === 0) return { positiveIdx: numGts.map(() => []), groups: 0, maxGts };
  const groups = Math.max(Math.floor(100 / maxGts), 1);
  const positiveIdx = numGts.map((n) => {
    const out: number[] = [];
    for (let g = 0; g < groups; g++) for (let k = 0; k < n; k++) out.push(2 * maxGts * g + k);
    return out;
  });
  return { positiveIdx, groups, maxGts };
}
