/**
 * RF-DETR's Hungarian matcher on the host (`HungarianMatcher` with group_detr): the cost of
 * prediction q for target t of class c is 5 L1(cxcywh) + 2 class + 2 (-GIoU), with the focal-style
 * class cost 0.25 (1-p)^2 (-log sigmoid(x)) - 0.75 p^2 (-log sigmoid(-x)) at column c, evaluated
 * in float32 steps over the whole batch; non-finite costs become max finite + max |finite| + 1.
 * The query slots are cut into equal groups, each matched on its own per image (util/lsap.ts,
 * scipy's semantics), so every target is matched once per group.
 */
import { linearSumAssignment } from '../../util/lsap.ts';
import { cxcywhToXyxy, giou, type ImageTargets, type Match, type MatchInput } from '../detr/matching.ts';

export const RFDETR_MATCH_COST = { class: 2, bbox: 5, giou: 2 } as const;
const FOCAL = { alpha: 0.25, gamma: 2 } as const;

const f = Math.fround;

/** log(sigmoid(x)) without overflow, rounded to float32. */
function logSigmoid(x: number): number {
  return f(x < 0 ? x - Math.log1p(Math.exp(x)) : -Math.log1p(Math.exp(-x)));
}

/** The `[B*Q, T]` cost of every query against every target of the batch (T = all images' targets). */
export function rfdetrMatchCost(out: MatchInput, targets: readonly ImageTargets[]): Float32Array {
  const { batch: B, queries: Q, nc } = out;
  const labels = targets.flatMap((t) => t.labels);
  const gtBoxes = targets.flatMap((t) => Array.from(t.boxes));
  const T = labels.length;
  const gtXyxy = Array.from({ length: T }, (_, g) => cxcywhToXyxy(gtBoxes, g * 4));
  const { alpha, gamma } = FOCAL;
  const cost = new Float32Array(B * Q * T);
  let maxFinite = -Infinity;
  let maxAbs = 0;
  let nonFinite = false;
  for (let row = 0; row < B * Q; row++) {
    const pb = out.boxes.subarray(row * 4, row * 4 + 4);
    const pXyxy = cxcywhToXyxy(pb, 0);
    for (let g = 0; g < T; g++) {
      const x = out.logits[row * nc + labels[g]!]!;
      const p = f(1 / (1 + Math.exp(-x)));
      const pos = f(f(alpha * f(f(1 - p) ** gamma)) * -logSigmoid(x));
      const neg = f(f((1 - alpha) * f(p ** gamma)) * -logSigmoid(-x));
      let l1 = 0;
      for (let k = 0; k < 4; k++) l1 = f(l1 + Math.abs(f(pb[k]! - gtBoxes[g * 4 + k]!)));
      const c = f(f(f(RFDETR_MATCH_COST.bbox * l1) + f(RFDETR_MATCH_COST.class * f(pos - neg))) + f(RFDETR_MATCH_COST.giou * -giou(pXyxy, gtXyxy[g]!)));
      cost[row * T + g] = c;
      if (Number.isFinite(c)) {
        maxFinite = Math.max(maxFinite, c);
        maxAbs = Math.max(maxAbs, Math.abs(c));
      } else nonFinite = true;
    }
  }
  if (nonFinite) {
    const fill = Number.isFinite(maxFinite) ? f(f(maxFinite + maxAbs) + 1) : 1;
    for (let k = 0; k < cost.length; k++) if (!Number.isFinite(cost[k]!)) cost[k] = fill;
  }
  return cost;
}

/**
 * The grouped Hungarian matching of every image: queries of group g are offset by g * Q / groups,
 * and the groups' pairs are concatenated in group order (rows ascending within each).
 */
export function rfdetrMatch(out: MatchInput, targets: readonly ImageTargets[], groups: number): Match[] {
  if (targets.length !== out.batch) throw new Error(`rfdetrMatch: ${targets.length} target sets for a batch of ${out.batch}`);
  if (out.queries % groups !== 0) throw new Error(`rfdetrMatch: ${out.queries} queries do not split into ${groups} groups`);
  const cost = rfdetrMatchCost(out, targets);
  const T = targets.reduce((a, t) => a + t.labels.length, 0);
  const per = out.queries / groups;
  let first = 0;
  return targets.map((gt, img) => {
    const n = gt.labels.length;
    const m: Match = { queries: [], targets: [] };
    for (let g = 0; g < groups; g++) {
      const block = new Float64Array(per * n);
      for (let r = 0; r < per; r++) for (let c = 0; c < n; c++) block[r * n + c] = cost[(img * out.queries + g * per + r) * T + first + c]!;
      const a = linearSumAssignment(block, per, n);
      m.queries.push(...a.rows.map((r) => r + g * per));
      m.targets.push(...a.cols);
    }
    first += n;
    return m;
  });
}
