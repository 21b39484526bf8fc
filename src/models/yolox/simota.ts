/**
 * SimOTA target assignment, per image, on the host: centre prior of radius 1.5
 * strides, pairwise IoU of ground truths with candidate predicted boxes, class cost (BCE of
 * sqrt(cls * obj) against the one-hot class over all classes), cost = cls + 3 * -ln(IoU + 1e-8) +
 * 1e6 outside the gt's own region, dynamic k = max(1, int(sum of the 10 best IoUs)), the k cheapest
 * candidates per gt, and an anchor claimed by several gts given to the cheapest gt of all.
 *
 * It runs on the host because dynamic k and the conflict rule are per-gt sorts of varying length;
 * the assignment is not differentiated (the original computes it under no_grad). Arithmetic is
 * float64 on the float32 predictions, except the centre-prior comparisons, which follow the
 * original's float32 arithmetic (an anchor on the region's edge falls on the same side).
 * Ties take the lowest candidate index (anchor order) and the lowest gt index.
 */

const f32 = Math.fround;

export const CENTER_RADIUS = 1.5;
export const IOU_COST_WEIGHT = 3.0;
export const OUTSIDE_COST = 1e6;
export const TOP_CANDIDATES = 10;

/** Anchor cells of a stride-8/16/32 head, level by level, row-major within a level. */
export interface AnchorGrid {
  count: number;
  gx: Int32Array;
  gy: Int32Array;
  stride: Int32Array;
}

export function anchorGrid(height: number, width: number, strides: readonly number[]): AnchorGrid {
  let count = 0;
  for (const s of strides) count += (height / s) * (width / s);
  const g: AnchorGrid = { count, gx: new Int32Array(count), gy: new Int32Array(count), stride: new Int32Array(count) };
  let k = 0;
  for (const s of strides) {
    for (let y = 0; y < height / s; y++) for (let x = 0; x < width / s; x++, k++) {
      g.gx[k] = x;
      g.gy[k] = y;
      g.stride[k] = s;
    }
  }
  return g;
}

/** A ground-truth box in input pixels (centre, size). */
export interface GtBox {
  cls: number;
  cx: number;
  cy: number;
  w: number;
  h: number;
}

/** One image's predictions: `rows[a * stride + 0..3]` = decoded cx, cy, w, h, then objectness and class logits. */
export interface ImagePredictions {
  rows: Float32Array;
  offset: number;
  /** Floats per anchor: 5 + nc. */
  stride: number;
  nc: number;
}

export interface Assignment {
  /** Candidate anchors (inside some gt's centre region), ascending. */
  candidates: number;
  /** Per gt, its dynamic k. */
  dynamicK: number[];
  /** Foreground anchors, ascending, with their matched gt and the IoU of their predicted box with it. */
  fgAnchors: number[];
  matchedGt: number[];
  predIou: number[];
}

function iouCxcywh(ax: number, ay: number, aw: number, ah: number, bx: number, by: number, bw: number, bh: number): number {
  const tlx = Math.max(ax - aw / 2, bx - bw / 2), tly = Math.max(ay - ah / 2, by - bh / 2);
  const brx = Math.min(ax + aw / 2, bx + bw / 2), bry = Math.min(ay + ah / 2, by + bh / 2);
  const inter = tlx < brx && tly < bry ? (brx - tlx) * (bry - tly) : 0;
  return inter / (aw * ah + bw * bh - inter);
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
/** PyTorch's binary_cross_entropy clamps each log at -100. */
const clampedLog = (p: number): number => Math.max(Math.log(p), -100);

/** Whether the centre of anchor `a` lies strictly inside gt `g`'s square of radius 1.5 strides (float32, as the original). */
function inRegion(grid: AnchorGrid, a: number, g: GtBox): boolean {
  const s = grid.stride[a]!;
  const r = f32(CENTER_RADIUS * s);
  const acx = f32((grid.gx[a]! + 0.5) * s);
  const acy = f32((grid.gy[a]! + 0.5) * s);
  const cx = f32(g.cx), cy = f32(g.cy);
  return f32(acx - f32(cx - r)) > 0 && f32(f32(cx + r) - acx) > 0 && f32(acy - f32(cy - r)) > 0 && f32(f32(cy + r) - acy) > 0;
}

export function simota(preds: ImagePredictions, grid: AnchorGrid, gts: readonly GtBox[]): Assignment {
  const G = gts.length;
  const empty: Assignment = { candidates: 0, dynamicK: [], fgAnchors: [], matchedGt: [], predIou: [] };
  if (G === 0) return empty;
  const { rows, offset, stride, nc } = preds;

  // 1. Candidates: anchors in the centre region of any gt; geometry[g][j] = in g's own region.
  const cand: number[] = [];
  const geometry: boolean[][] = gts.map(() => []);
  for (let a = 0; a < grid.count; a++) {
    const inside = gts.map((g) => inRegion(grid, a, g));
    if (!inside.some(Boolean)) continue;
    cand.push(a);
    inside.forEach((v, g) => geometry[g]!.push(v));
  }
  const C = cand.length;
  if (C === 0) return { ...empty, dynamicK: gts.map(() => 0) };

  // 2-4. IoU, class cost and total cost per (gt, candidate).
  const iou = gts.map(() => new Float64Array(C));
  const cost = gts.map(() => new Float64Array(C));
  for (let j = 0; j < C; j++) {
    const o = offset + cand[j]! * stride;
    const [px, py, pw, ph] = [rows[o]!, rows[o + 1]!, rows[o + 2]!, rows[o + 3]!];
    const obj = sigmoid(rows[o + 4]!);
    // Sum over classes of -log(1 - p_c): the negative part of every one-hot BCE.
    let negAll = 0;
    const p = new Float64Array(nc);
    for (let c = 0; c < nc; c++) {
      p[c] = Math.sqrt(sigmoid(rows[o + 5 + c]!) * obj);
      negAll -= clampedLog(1 - p[c]!);
    }
    gts.forEach((g, gi) => {
      const v = iouCxcywh(g.cx, g.cy, g.w, g.h, px, py, pw, ph);
      iou[gi]![j] = v;
      const pc = p[g.cls]!;
      const clsCost = negAll + clampedLog(1 - pc) - clampedLog(pc);
      cost[gi]![j] = clsCost + IOU_COST_WEIGHT * -Math.log(v + 1e-8) + (geometry[gi]![j] ? 0 : OUTSIDE_COST);
    });
  }

  // 5-6. Dynamic k per gt, and its k cheapest candidates (ties: lower candidate index first).
  const claims = new Int32Array(C);
  const claimedBy = new Int32Array(C).fill(-1);
  const dynamicK: number[] = [];
  for (let gi = 0; gi < G; gi++) {
    const top = Array.from(iou[gi]!).sort((x, y) => y - x).slice(0, Math.min(TOP_CANDIDATES, C));
    const k = Math.max(1, Math.trunc(top.reduce((s, v) => s + v, 0)));
    dynamicK.push(k);
    const order = Array.from({ length: C }, (_, j) => j).sort((x, y) => (cost[gi]![x]! - cost[gi]![y]!) || (x - y));
    for (const j of order.slice(0, k)) {
      claims[j]!++;
      claimedBy[j] = gi;
    }
  }

  // 7-8. Foreground = claimed candidates; a contested one goes to the cheapest gt over all gts.
  const out: Assignment = { candidates: C, dynamicK, fgAnchors: [], matchedGt: [], predIou: [] };
  for (let j = 0; j < C; j++) {
    if (claims[j] === 0) continue;
    let g = claimedBy[j]!;
    if (claims[j]! > 1) {
      g = 0;
      for (let gi = 1; gi < G; gi++) if (cost[gi]![j]! < cost[g]![j]!) g = gi;
    }
    out.fgAnchors.push(cand[j]!);
    out.matchedGt.push(g);
    out.predIou.push(iou[g]![j]!);
  }
  return out;
}
