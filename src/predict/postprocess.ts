/**
 * Detection postprocess for one image's raw head output `[4+nc, A]` (xyxy canvas pixels, then sigmoid
 * class scores): multi-label thresholding, candidate cap, un-letterbox, clamp, class-aware greedy NMS,
 * max_det, and the optional post-NMS class filter.
 *
 * Arithmetic follows the reference (float32 tensors): the threshold is compared in float32, boxes are
 * divided by float32(ratio), IoU is computed in float32 and compared to the double threshold. Ties in
 * score are broken by anchor-major candidate order (anchor, then class), the order the reference's
 * stable sorts keep.
 */

import type { DetectionSet } from '../models/registry.ts';

/** N x 4 xyxy in original-image pixels, scores, class ids stored as floats (like the reference's Boxes.cls). */
export type Detections = DetectionSet;

export interface PostprocessOptions {
  conf: number;
  iou: number;
  maxDet: number;
  classes?: readonly number[] | null;
  /** letterbox ratio (canvas px per original px) */
  ratio: number;
  origWidth: number;
  origHeight: number;
}

/** The reference keeps at most this many threshold survivors (or max_det, if larger) before NMS. */
export const MAX_CANDIDATES = 30000;
/** With a class filter the family postprocess runs with at least this max_det. */
export const CLASS_FILTER_MIN_DET = 300;

const f32 = Math.fround;

/** Growable parallel arrays of (anchor, class) candidates. */
class Candidates {
  anchor = new Int32Array(1024);
  score = new Float32Array(1024);
  /** first candidate of each class; classStart[nc] = count */
  classStart: Int32Array;
  count = 0;
  constructor(nc: number) { this.classStart = new Int32Array(nc + 1); }
  grow(): void {
    const a = new Int32Array(this.anchor.length * 2); a.set(this.anchor); this.anchor = a;
    const s = new Float32Array(this.score.length * 2); s.set(this.score); this.score = s;
  }
}

/** One pass over the class-major score rows; candidates come out grouped by class, anchors ascending. */
function collect(out: Float32Array, offset: number, A: number, nc: number, thr: number): Candidates {
  const cand = new Candidates(nc);
  let anchor = cand.anchor, score = cand.score, n = 0;
  for (let c = 0; c < nc; c++) {
    cand.classStart[c] = n;
    const base = offset + (4 + c) * A;
    for (let a = 0; a < A; a++) {
      const s = out[base + a]!;
      if (s > thr) {
        if (n === anchor.length) { cand.count = n; cand.grow(); anchor = cand.anchor; score = cand.score; }
        anchor[n] = a; score[n] = s; n++;
      }
    }
  }
  cand.classStart[nc] = n;
  cand.count = n;
  return cand;
}

/**
 * Marks the `cap` best candidates (by score; equal scores at the cut go in anchor-major order).
 * Returns null when everything fits.
 */
function capMask(cand: Candidates, nc: number, cap: number): Uint8Array | null {
  const n = cand.count;
  if (n <= cap) return null;
  const sorted = cand.score.slice(0, n).sort();
  const cut = sorted[n - cap]!;
  const keep = new Uint8Array(n);
  let kept = 0;
  const ties: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = cand.score[i]!;
    if (s > cut) { keep[i] = 1; kept++; } else if (s === cut) ties.push(i);
  }
  const clsOf = (i: number): number => {
    let lo = 0, hi = nc - 1; // last class whose start <= i
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (cand.classStart[mid]! <= i) lo = mid; else hi = mid - 1; }
    return lo;
  };
  ties.sort((p, q) => (cand.anchor[p]! - cand.anchor[q]!) || (clsOf(p) - clsOf(q)));
  for (let k = 0; k < ties.length && kept < cap; k++, kept++) keep[ties[k]!] = 1;
  return keep;
}

const POS_RANGE = 2 ** 21;

/** Order-preserving uint32 image of a float32 value (for packing into a sort key). */
const keyF = new Float32Array(1);
const keyU = new Uint32Array(keyF.buffer);
function orderedBits(v: number): number {
  keyF[0] = v;
  const b = keyU[0]!;
  return b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
}

/**
 * Sorts one class's candidate indices by score desc, then index asc (= anchor asc, since a class's
 * candidates are collected in anchor order). Score bits and the offset from the class's first
 * candidate pack into one exact double (32 + 21 bits), so the native typed-array sort does the work;
 * a comparator sort covers classes with more than 2^21 candidates.
 */
function sortByScore(idx: Int32Array, m: number, first: number, score: Float32Array): void {
  if (idx[m - 1]! - first < POS_RANGE) { // idx is still ascending here
    const keys = new Float64Array(m);
    for (let k = 0; k < m; k++) {
      const i = idx[k]!;
      keys[k] = (0xffffffff - orderedBits(score[i]!)) * POS_RANGE + (i - first);
    }
    keys.sort();
    for (let k = 0; k < m; k++) idx[k] = first + (keys[k]! % POS_RANGE);
    return;
  }
  const sub = Array.from(idx.subarray(0, m));
  sub.sort((p, q) => (score[q]! - score[p]!) || (p - q));
  idx.set(sub);
}

/** Everything except the class filter, up to and including max_det; rows sorted by score desc. */
function detect(out: Float32Array, offset: number, A: number, nc: number, opts: PostprocessOptions, maxDet: number): Detections {
  const cand = collect(out, offset, A, nc, f32(opts.conf));
  const mask = capMask(cand, nc, Math.max(maxDet, MAX_CANDIDATES));
  const { anchor, score, classStart } = cand;
  const r = f32(opts.ratio);
  const W = opts.origWidth, H = opts.origHeight;
  const iouThr = opts.iou;

  // Un-letterboxed, clamped boxes per candidate (only those that survive the cap and are non-degenerate).
  const n = cand.count;
  const bx = new Float32Array(n * 4);
  const area = new Float32Array(n);
  const keep: number[] = [];
  const idx = new Int32Array(n);
  const suppressed = new Uint8Array(n);
  for (let c = 0; c < nc; c++) {
    let m = 0;
    for (let i = classStart[c]!; i < classStart[c + 1]!; i++) {
      if (mask !== null && mask[i] === 0) continue;
      const a = anchor[i]!;
      let x1 = f32(out[offset + a]! / r), y1 = f32(out[offset + A + a]! / r);
      let x2 = f32(out[offset + 2 * A + a]! / r), y2 = f32(out[offset + 3 * A + a]! / r);
      x1 = Math.min(Math.max(x1, 0), W); x2 = Math.min(Math.max(x2, 0), W);
      y1 = Math.min(Math.max(y1, 0), H); y2 = Math.min(Math.max(y2, 0), H);
      if (!(x2 > x1) || !(y2 > y1)) continue;
      const o = i * 4;
      bx[o] = x1; bx[o + 1] = y1; bx[o + 2] = x2; bx[o + 3] = y2;
      area[i] = f32(f32(x2 - x1) * f32(y2 - y1));
      idx[m++] = i;
    }
    if (m === 0) continue;
    sortByScore(idx, m, classStart[c]!, score);
    // Greedy NMS within the class: a box suppresses later ones whose IoU is strictly above the threshold.
    for (let p = 0; p < m; p++) {
      const i = idx[p]!;
      if (suppressed[i]) continue;
      keep.push(i);
      const oi = i * 4;
      const ix1 = bx[oi]!, iy1 = bx[oi + 1]!, ix2 = bx[oi + 2]!, iy2 = bx[oi + 3]!, ia = area[i]!;
      for (let q = p + 1; q < m; q++) {
        const j = idx[q]!;
        if (suppressed[j]) continue;
        const oj = j * 4;
        const w = Math.max(0, f32(Math.min(ix2, bx[oj + 2]!) - Math.max(ix1, bx[oj]!)));
        const h = Math.max(0, f32(Math.min(iy2, bx[oj + 3]!) - Math.max(iy1, bx[oj + 1]!)));
        const inter = f32(w * h);
        if (f32(inter / f32(f32(ia + area[j]!) - inter)) > iouThr) suppressed[j] = 1;
      }
    }
  }

  // Merge classes: score desc, ties in anchor-major order; class is recovered from classStart.
  const clsOf = new Int32Array(n);
  for (let c = 0; c < nc; c++) clsOf.fill(c, classStart[c]!, classStart[c + 1]!);
  keep.sort((p, q) => (score[q]! - score[p]!) || (anchor[p]! - anchor[q]!) || (clsOf[p]! - clsOf[q]!));
  const count = Math.min(keep.length, Math.max(0, maxDet));
  const det: Detections = { xyxy: new Float32Array(count * 4), conf: new Float32Array(count), cls: new Float32Array(count) };
  for (let k = 0; k < count; k++) {
    const i = keep[k]!;
    det.xyxy.set(bx.subarray(i * 4, i * 4 + 4), k * 4);
    det.conf[k] = score[i]!;
    det.cls[k] = clsOf[i]!;
  }
  return det;
}

/** Keeps rows whose class is listed, then the first `maxDet` of them (rows are already score-ordered). */
export function filterClasses(det: Detections, classes: readonly number[], maxDet: number): Detections {
  const allowed = new Set(classes);
  const rows: number[] = [];
  for (let k = 0; k < det.conf.length; k++) if (allowed.has(det.cls[k]!)) rows.push(k);
  // The reference takes the top max_det by score and restores row order; on score-sorted rows that is a prefix.
  const count = maxDet >= 0 ? Math.min(rows.length, maxDet) : rows.length;
  const out: Detections = { xyxy: new Float32Array(count * 4), conf: new Float32Array(count), cls: new Float32Array(count) };
  for (let k = 0; k < count; k++) {
    const i = rows[k]!;
    out.xyxy.set(det.xyxy.subarray(i * 4, i * 4 + 4), k * 4);
    out.conf[k] = det.conf[i]!;
    out.cls[k] = det.cls[i]!;
  }
  return out;
}

/**
 * Detections for one image. `output` holds `[4+nc, numAnchors]` starting at `offset` (row stride
 * `numAnchors`), so a batch output can be processed image by image without copies.
 */
export function postprocessDetections(
  output: Float32Array, offset: number, numAnchors: number, nc: number, opts: PostprocessOptions,
): Detections {
  const need = offset + (4 + nc) * numAnchors;
  if (offset < 0 || output.length < need) {
    throw new RangeError(`postprocess: output holds ${output.length} floats, need ${need} (offset ${offset}, [${4 + nc}, ${numAnchors}])`);
  }
  if (opts.classes == null) return detect(output, offset, numAnchors, nc, opts, opts.maxDet);
  const det = detect(output, offset, numAnchors, nc, opts, Math.max(opts.maxDet, CLASS_FILTER_MIN_DET));
  return filterClasses(det, opts.classes, opts.maxDet);
}
