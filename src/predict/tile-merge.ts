/**
 * How tile detections become one set, with SAHI's choices (written here from its documented
 * behaviour): `NMS` drops a box that matches a better one, `GREEDYNMM` merges each box into the best
 * unclaimed box it matches, `NMM` lets clusters grow through chains of matches. Boxes match when
 * IoU (`IOU`) or intersection over the smaller box (`IOS`) is strictly above the threshold; merging
 * takes the union box, the higher score and the higher-scoring box's class. Matching is per class
 * unless `classAgnostic`.
 *
 * The default rule (NMS, IOU, the predict `iou`, per class) is the original's tile merge and runs the
 * same code as before (`mergeDetections`), so parity holds.
 */
import { concatDetections, mergeDetections } from './merge.ts';
import type { Detections } from './postprocess.ts';

export const MERGE_TYPES = ['NMS', 'NMM', 'GREEDYNMM'] as const;
export const MATCH_METRICS = ['IOU', 'IOS'] as const;
export type MergeType = (typeof MERGE_TYPES)[number];
export type MatchMetric = (typeof MATCH_METRICS)[number];

export interface MergeRule {
  type: MergeType;
  metric: MatchMetric;
  threshold: number;
  classAgnostic: boolean;
}

type Box = [number, number, number, number];

function matchValue(a: Box, b: Box, metric: MatchMetric): number {
  const w = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
  const h = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const inter = w * h;
  const areaA = (a[2] - a[0]) * (a[3] - a[1]), areaB = (b[2] - b[0]) * (b[3] - b[1]);
  const denom = metric === 'IOU' ? areaA + areaB - inter : Math.min(areaA, areaB);
  return denom > 0 ? inter / denom : 0;
}

/**
 * Keep -> rows to merge into it, for one group of rows given in descending score order. NMS fills no
 * merge lists (its matches are dropped).
 */
function cluster(order: readonly number[], boxes: readonly Box[], rule: MergeRule): Map<number, number[]> {
  const matches = (i: number, j: number): boolean => matchValue(boxes[i]!, boxes[j]!, rule.metric) > rule.threshold;
  const out = new Map<number, number[]>();
  if (rule.type === 'NMM') {
    // Every row, best first, claims the unclaimed rows it matches for its own keep (or for the keep
    // that claimed it), so a cluster grows through chains of matches.
    const keepOf = new Map<number, number>();
    for (const i of order) {
      const owner = keepOf.get(i) ?? i;
      if (owner === i) out.set(i, out.get(i) ?? []);
      for (const j of order) {
        if (j === i || keepOf.has(j) || out.has(j) || !matches(i, j)) continue;
        out.get(owner)!.push(j);
        keepOf.set(j, owner);
      }
    }
    return out;
  }
  const taken = new Uint8Array(boxes.length);
  for (let p = 0; p < order.length; p++) {
    const i = order[p]!;
    if (taken[i]) continue;
    const merged: number[] = [];
    for (let q = p + 1; q < order.length; q++) {
      const j = order[q]!;
      if (!taken[j] && matches(i, j)) { taken[j] = 1; merged.push(j); }
    }
    out.set(i, rule.type === 'GREEDYNMM' ? merged : []);
  }
  return out;
}

/** Merges tile (and full-image) detections by `rule`; rows come out by descending score. */
export function mergeTiles(parts: readonly Detections[], rule: MergeRule, iou: number): Detections {
  if (rule.type === 'NMS' && rule.metric === 'IOU' && !rule.classAgnostic && rule.threshold === iou) return mergeDetections(parts, iou);
  const all = concatDetections(parts);
  const n = all.conf.length;
  const boxes: Box[] = Array.from({ length: n }, (_, k) => [all.xyxy[4 * k]!, all.xyxy[4 * k + 1]!, all.xyxy[4 * k + 2]!, all.xyxy[4 * k + 3]!]);
  const byScore = Array.from({ length: n }, (_, k) => k).sort((a, b) => all.conf[b]! - all.conf[a]! || a - b);
  const groups = new Map<number, number[]>();
  for (const k of byScore) {
    const g = rule.classAgnostic ? 0 : all.cls[k]!;
    const list = groups.get(g);
    if (list) list.push(k); else groups.set(g, [k]);
  }
  const rows: Array<{ box: Box; conf: number; cls: number }> = [];
  for (const order of groups.values()) {
    for (const [keep, merged] of cluster(order, boxes, rule)) {
      const row = { box: [...boxes[keep]!] as Box, conf: all.conf[keep]!, cls: all.cls[keep]! };
      // Each member is merged only while it still matches the growing box, as SAHI re-checks.
      for (const j of merged) {
        if (!(matchValue(row.box, boxes[j]!, rule.metric) > rule.threshold)) continue;
        const b = boxes[j]!;
        row.box = [Math.min(row.box[0], b[0]), Math.min(row.box[1], b[1]), Math.max(row.box[2], b[2]), Math.max(row.box[3], b[3])];
        if (all.conf[j]! > row.conf) { row.conf = all.conf[j]!; row.cls = all.cls[j]!; }
      }
      rows.push(row);
    }
  }
  rows.sort((a, b) => b.conf - a.conf);
  const out: Detections = { xyxy: new Float32Array(rows.length * 4), conf: new Float32Array(rows.length), cls: new Float32Array(rows.length) };
  rows.forEach((r, k) => { out.xyxy.set(r.box, 4 * k); out.conf[k] = r.conf; out.cls[k] = r.cls; });
  return out;
}
