/**
 * D-FINE's Hungarian matcher on the host: per image, the cost of query q for gt g is
 * 5 L1(cxcywh) + 2 focal class cost (alpha 0.25, gamma 2) - 2 GIoU, NaN -> 1, and the one-to-one
 * assignment of least total cost (util/lsap.ts, scipy's semantics). The cost is evaluated in float32
 * steps as PyTorch computes it, so near-ties resolve as the original's do. Also the cross-layer
 * union of matchings (GO, `_get_go_indices`) and the denoising matches.
 */
import { linearSumAssignment } from '../../util/lsap.ts';

export const MATCH_COST = { class: 2, bbox: 5, giou: 2 } as const;
export const MATCH_FOCAL = { alpha: 0.25, gamma: 2 } as const;

/** Ground truths of one image: classes and cx cy w h boxes normalised 0..1. */
export interface ImageTargets {
  labels: number[];
  /** `[n * 4]` cx cy w h. */
  boxes: Float32Array;
}

/** Matched pairs of one image: `queries[k]` predicts gt `targets[k]`. */
export interface Match {
  queries: number[];
  targets: number[];
}

/** A layer's output for matching: `logits` `[B, Q, nc]`, `boxes` `[B, Q, 4]` cxcywh. */
export interface MatchInput {
  logits: Float32Array;
  boxes: Float32Array;
  batch: number;
  queries: number;
  nc: number;
}

const f = Math.fround;

/** cxcywh -> xyxy with the size clamped at 0, in float32 steps (`box_cxcywh_to_xyxy`). */
function toXyxy(b: ArrayLike<number>, o: number): [number, number, number, number] {
  const hw = f(0.5 * Math.max(b[o + 2]!, 0));
  const hh = f(0.5 * Math.max(b[o + 3]!, 0));
  return [f(b[o]! - hw), f(b[o + 1]! - hh), f(b[o]! + hw), f(b[o + 1]! + hh)];
}

/** GIoU of two xyxy boxes in float32 steps (`generalized_box_iou`). */
export function giou(a: readonly number[], b: readonly number[]): number {
  const areaA = f(f(a[2]! - a[0]!) * f(a[3]! - a[1]!));
  const areaB = f(f(b[2]! - b[0]!) * f(b[3]! - b[1]!));
  const iw = Math.max(f(Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!)), 0);
  const ih = Math.max(f(Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!)), 0);
  const inter = f(iw * ih);
  const union = f(f(areaA + areaB) - inter);
  const iou = f(inter / union);
  const ew = Math.max(f(Math.max(a[2]!, b[2]!) - Math.min(a[0]!, b[0]!)), 0);
  const eh = Math.max(f(Math.max(a[3]!, b[3]!) - Math.min(a[1]!, b[1]!)), 0);
  const area = f(ew * eh);
  return f(iou - f(f(area - union) / area));
}

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
