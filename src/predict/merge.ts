/**
 * Merging detections from several forwards of one image (tiles, TTA views): class-aware greedy NMS
 * the way torchvision's batched_nms does it (score descending, a box is dropped when its IoU with a
 * kept box of its class is strictly above the threshold, areas without +1).
 */
import { filterClasses, type Detections } from './postprocess.ts';

export function emptyDetections(): Detections {
  return { xyxy: new Float32Array(0), conf: new Float32Array(0), cls: new Float32Array(0) };
}

/** Indices kept by per-class NMS, in descending score order (ties keep input order). */
export function batchedNms(xyxy: Float32Array, conf: Float32Array, cls: Float32Array, iou: number): number[] {
  const n = conf.length;
  const order = Array.from({ length: n }, (_, k) => k).sort((a, b) => conf[b]! - conf[a]! || a - b);
  const area = new Float64Array(n);
  for (let k = 0; k < n; k++) area[k] = (xyxy[4 * k + 2]! - xyxy[4 * k]!) * (xyxy[4 * k + 3]! - xyxy[4 * k + 1]!);
  const suppressed = new Uint8Array(n);
  const keep: number[] = [];
  for (let p = 0; p < n; p++) {
    const i = order[p]!;
    if (suppressed[i]) continue;
    keep.push(i);
    const x1 = xyxy[4 * i]!, y1 = xyxy[4 * i + 1]!, x2 = xyxy[4 * i + 2]!, y2 = xyxy[4 * i + 3]!;
    for (let q = p + 1; q < n; q++) {
      const j = order[q]!;
      if (suppressed[j] || cls[j] !== cls[i]) continue;
      const w = Math.max(0, Math.min(x2, xyxy[4 * j + 2]!) - Math.max(x1, xyxy[4 * j]!));
      const h = Math.max(0, Math.min(y2, xyxy[4 * j + 3]!) - Math.max(y1, xyxy[4 * j + 1]!));
      const inter = w * h;
      if (inter / (area[i]! + area[j]! - inter) > iou) suppressed[j] = 1;
    }
  }
  return keep;
}

/** Concatenates detection sets, dropping rows with a non-finite box or score. */
export function concatDetections(parts: readonly Detections[]): Detections {
  let n = 0;
  for (const p of parts) n += p.conf.length;
  const xyxy = new Float32Array(n * 4), conf = new Float32Array(n), cls = new Float32Array(n);
  let m = 0;
  for (const p of parts) {
    for (let k = 0; k < p.conf.length; k++) {
      const row = p.xyxy.subarray(4 * k, 4 * k + 4);
      if (!row.every(Number.isFinite) || !Number.isFinite(p.conf[k]!)) continue;
      xyxy.set(row, 4 * m);
      conf[m] = p.conf[k]!;
      cls[m] = p.cls[k]!;
      m++;
    }
  }
  return { xyxy: xyxy.subarray(0, 4 * m), conf: conf.subarray(0, m), cls: cls.subarray(0, m) };
}

/** Concatenates detection sets, drops non-finite rows, runs per-class NMS; rows come out by score. */
export function mergeDetections(parts: readonly Detections[], iou: number): Detections {
  const all = concatDetections(parts);
  return select(all, batchedNms(all.xyxy, all.conf, all.cls, iou));
}

export function select(det: Detections, rows: readonly number[]): Detections {
  const out: Detections = { xyxy: new Float32Array(rows.length * 4), conf: new Float32Array(rows.length), cls: new Float32Array(rows.length) };
  rows.forEach((i, k) => {
    out.xyxy.set(det.xyxy.subarray(4 * i, 4 * i + 4), 4 * k);
    out.conf[k] = det.conf[i]!;
    out.cls[k] = det.cls[i]!;
  });
  return out;
}

/** The first `maxDet` rows (rows are score-ordered). */
export function truncate(det: Detections, maxDet: number): Detections {
  if (maxDet < 0 || det.conf.length <= maxDet) return det;
  return select(det, Array.from({ length: maxDet }, (_, k) => k));
}

/**
 * Detections of one image from a family's own candidates: per-class NMS, score order, max_det,
 * then the class filter (applied after max_det, as the original's result wrapper does).
 */
export function familyDetections(cand: Detections, opts: { iou: number; maxDet: number; classes?: readonly number[] | null }): Detections {
  const det = truncate(select(cand, batchedNms(cand.xyxy, cand.conf, cand.cls, opts.iou)), opts.maxDet);
  return opts.classes ? filterClasses(det, opts.classes, -1) : det;
}
