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

import { postprocessSpec, type DetectionSet, type ModelFamily } from '../models/registry.ts';

/** N x 4 xyxy in original-image pixels, scores, class ids stored as floats (like the reference's Boxes.cls). */
export type Detections = DetectionSet;

export interface PostprocessOptions {
  conf: number;
  iou: number;
  maxDet: number;
  classes?: readonly number[] | null;
  /** letterbox ratio (canvas px per original px); along x when `ratioY` is set */
  ratio: number;
  /** y ratio of a resize-stretch input (default: `ratio`) */
  ratioY?: number;
  /** NMS across classes instead of per class */
  agnostic?: boolean;
  /** NMS-free: keep the `topk` best (query, class) pairs instead of running NMS */
  topk?: number;
  /** With `topk`: clamp boxes to the image and drop empty ones (default true; DETRs keep boxes as predicted) */
  clip?: boolean;
  /** With `topk`: the class id of each score column, -1 to drop its pairs after the threshold (default: the column) */
  columnClasses?: Int32Array;
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

/** (anchor, class) pairs in best-first order. */
interface Ranked { anchors: Int32Array; classes: Int32Array }

/** Sorts packed keys `(0xffffffff - scoreBits) * 2^21 + anchor * nc + class` and unpacks them. */
function unpackSorted(keys: Float64Array, nc: number): Ranked {
  keys.sort();
  const m = keys.length;
  const anchors = new Int32Array(m), classes = new Int32Array(m);
  for (let k = 0; k < m; k++) {
    const pair = keys[k]! % POS_RANGE;
    anchors[k] = Math.floor(pair / nc);
    classes[k] = pair - anchors[k]! * nc;
  }
  return { anchors, classes };
}

/**
 * Every candidate that survived the cap as (anchor, class), best first: score desc, then anchor asc,
 * then class asc (the reference's order), in segments. Score bits and `anchor * nc + class` pack into
 * one exact double (32 + 21 bits), so the native typed-array sort does the work. The NMS walk usually
 * stops after a few hundred kept boxes, so the first segment holds only the best `lead` candidates
 * (split on a histogram of the high score bits, so equal scores never straddle segments) and the rest
 * is sorted only if the walk gets there. A comparator sort covers heads of more than 2^21 pairs.
 */
function* bestFirst(cand: Candidates, mask: Uint8Array | null, A: number, nc: number, lead: number): Generator<Ranked> {
  const n = cand.count;
  const { anchor, score, classStart } = cand;
  if (A * nc > POS_RANGE) {
    const clsOf = new Int32Array(n);
    for (let c = 0; c < nc; c++) clsOf.fill(c, classStart[c]!, classStart[c + 1]!);
    const idx: number[] = [];
    for (let i = 0; i < n; i++) if (mask === null || mask[i] === 1) idx.push(i);
    idx.sort((p, q) => (score[q]! - score[p]!) || (anchor[p]! - anchor[q]!) || (clsOf[p]! - clsOf[q]!));
    yield { anchors: Int32Array.from(idx, (i) => anchor[i]!), classes: Int32Array.from(idx, (i) => clsOf[i]!) };
    return;
  }
  const keys = new Float64Array(n);
  const bits = new Uint32Array(n);
  const hist = new Int32Array(1 << 16);
  let m = 0;
  for (let c = 0; c < nc; c++) {
    for (let i = classStart[c]!; i < classStart[c + 1]!; i++) {
      if (mask !== null && mask[i] === 0) continue;
      const o = orderedBits(score[i]!);
      bits[m] = o;
      hist[o >>> 16]!++;
      keys[m++] = (0xffffffff - o) * POS_RANGE + (anchor[i]! * nc + c);
    }
  }
  // Lowest high-bits bucket that still keeps the best `lead` candidates inside the first segment.
  let cut = hist.length;
  for (let seen = 0; cut > 0 && seen < lead;) seen += hist[--cut]!;
  if (cut === 0) { yield unpackSorted(keys.subarray(0, m), nc); return; }
  const first: number[] = [], rest: number[] = [];
  for (let k = 0; k < m; k++) (bits[k]! >>> 16 >= cut ? first : rest).push(keys[k]!);
  yield unpackSorted(Float64Array.from(first), nc);
  if (rest.length) yield unpackSorted(Float64Array.from(rest), nc);
}

/**
 * Everything except the class filter, up to and including max_det; rows sorted by score desc.
 *
 * Per-class greedy NMS visited in one global best-first order: a box is kept unless a kept box of
 * its class overlaps it by IoU strictly above the threshold, which is exactly what class-by-class
 * greedy NMS keeps, and the kept boxes come out already merged in the reference's order. So the walk
 * stops at max_det kept boxes, and only visited candidates are un-letterboxed: at conf 0.001 most of
 * the candidates are never touched.
 */
function detect(out: Float32Array, offset: number, A: number, nc: number, opts: PostprocessOptions, maxDet: number): Detections {
  const cand = collect(out, offset, A, nc, f32(opts.conf));
  const mask = capMask(cand, nc, Math.max(maxDet, MAX_CANDIDATES));
  const r = f32(opts.ratio), ry = f32(opts.ratioY ?? opts.ratio);
  const W = opts.origWidth, H = opts.origHeight;
  const iouThr = opts.iou;
  const cap = Math.max(0, Math.min(maxDet, cand.count));
  // Kept boxes, with a per-class linked list (head[c] -> next[k]) so a candidate meets only its class;
  // class-agnostic NMS keeps one list for all classes.
  const group = (c: number): number => (opts.agnostic ? 0 : c);
  const X1 = new Float32Array(cap), Y1 = new Float32Array(cap), X2 = new Float32Array(cap), Y2 = new Float32Array(cap), AR = new Float32Array(cap);
  const conf = new Float32Array(cap), cls = new Float32Array(cap);
  const next = new Int32Array(cap), head = new Int32Array(nc).fill(-1);
  let kept = 0;
  // A few times max_det candidates usually yield max_det kept boxes; the rest is sorted only if not.
  walk: for (const { anchors, classes } of cap > 0 ? bestFirst(cand, mask, A, nc, 8 * cap) : []) {
    for (let k = 0; k < anchors.length; k++) {
      const a = anchors[k]!, c = classes[k]!;
      let x1 = f32(out[offset + a]! / r), y1 = f32(out[offset + A + a]! / ry);
      let x2 = f32(out[offset + 2 * A + a]! / r), y2 = f32(out[offset + 3 * A + a]! / ry);
      x1 = Math.min(Math.max(x1, 0), W); x2 = Math.min(Math.max(x2, 0), W);
      y1 = Math.min(Math.max(y1, 0), H); y2 = Math.min(Math.max(y2, 0), H);
      if (!(x2 > x1) || !(y2 > y1)) continue;
      const area = f32(f32(x2 - x1) * f32(y2 - y1));
      let suppressed = false;
      for (let j = head[group(c)]!; j >= 0; j = next[j]!) {
        // Boxes that do not overlap have IoU 0, which never exceeds the threshold: no arithmetic for them.
        if (X1[j]! >= x2 || X2[j]! <= x1 || Y1[j]! >= y2 || Y2[j]! <= y1) continue;
        const w = Math.max(0, f32(Math.min(X2[j]!, x2) - Math.max(X1[j]!, x1)));
        const h = Math.max(0, f32(Math.min(Y2[j]!, y2) - Math.max(Y1[j]!, y1)));
        const inter = f32(w * h);
        if (f32(inter / f32(f32(AR[j]! + area) - inter)) > iouThr) { suppressed = true; break; }
      }
      if (suppressed) continue;
      X1[kept] = x1; Y1[kept] = y1; X2[kept] = x2; Y2[kept] = y2; AR[kept] = area;
      conf[kept] = out[offset + (4 + c) * A + a]!;
      cls[kept] = c;
      next[kept] = head[group(c)]!;
      head[group(c)] = kept;
      kept++;
      if (kept === cap) break walk;
    }
  }
  const xyxy = new Float32Array(kept * 4);
  for (let k = 0; k < kept; k++) { xyxy[4 * k] = X1[k]!; xyxy[4 * k + 1] = Y1[k]!; xyxy[4 * k + 2] = X2[k]!; xyxy[4 * k + 3] = Y2[k]!; }
  return { xyxy, conf: conf.slice(0, kept), cls: cls.slice(0, kept) };
}

/** Un-letterboxed box of anchor `a`, clamped to the image; false when it is degenerate. */
function unmapBox(out: Float32Array, offset: number, A: number, a: number, rx: number, ry: number, W: number, H: number, dst: Float32Array, o: number): boolean {
  let x1 = f32(out[offset + a]! / rx), y1 = f32(out[offset + A + a]! / ry);
  let x2 = f32(out[offset + 2 * A + a]! / rx), y2 = f32(out[offset + 3 * A + a]! / ry);
  x1 = Math.min(Math.max(x1, 0), W); x2 = Math.min(Math.max(x2, 0), W);
  y1 = Math.min(Math.max(y1, 0), H); y2 = Math.min(Math.max(y2, 0), H);
  if (!(x2 > x1) || !(y2 > y1)) return false;
  dst[o] = x1; dst[o + 1] = y1; dst[o + 2] = x2; dst[o + 3] = y2;
  return true;
}

/** The predict default of `max_det`; the NMS-free selection keeps its own `k` unless max_det differs. */
export const DEFAULT_MAX_DET = 300;

/**
 * NMS-free selection (DETR families, as the original's DETR postprocess): the best
 * `count` (query, class) scores over all pairs, where count = k, or max_det when it differs from
 * the default, capped at queries x classes; ties to the lower query-major index `a * nc + c`. Then
 * the strict conf threshold, the column -> class map (if any, dropping unmapped columns) and
 * un-mapping; boxes are clamped (and empty ones dropped) only with `clip`.
 */
function selectTopK(out: Float32Array, offset: number, A: number, nc: number, opts: PostprocessOptions, k: number): Detections {
  const { source: _source, ...det } = selectTopKRows(out, offset, A, nc, opts, k);
  return det;
}

/** `selectTopK` with the query each kept pair came from (repeated when a query is picked for two classes). */
export function selectTopKRows(out: Float32Array, offset: number, A: number, nc: number, opts: PostprocessOptions, k: number): Detections & { source: Int32Array } {
  const total = A * nc;
  const count = Math.min(opts.maxDet === DEFAULT_MAX_DET ? k : opts.maxDet, total);
  const scores = new Float32Array(total);
  for (let c = 0; c < nc; c++) {
    const row = offset + (4 + c) * A;
    for (let a = 0; a < A; a++) scores[a * nc + c] = out[row + a]!;
  }
  const order = Int32Array.from({ length: total }, (_, t) => t).sort((p, q) => (scores[q]! - scores[p]!) || (p - q)).subarray(0, count);
  const rx = f32(opts.ratio), ry = f32(opts.ratioY ?? opts.ratio);
  const thr = f32(opts.conf);
  const clip = opts.clip ?? true;
  const box = new Float32Array(4);
  const det: Detections = { xyxy: new Float32Array(count * 4), conf: new Float32Array(count), cls: new Float32Array(count) };
  const source = new Int32Array(count);
  let n = 0;
  for (const t of order) {
    const s = scores[t]!;
    if (!(s > thr)) continue;
    const c = opts.columnClasses ? opts.columnClasses[t % nc]! : t % nc;
    if (c < 0) continue;
    const a = Math.floor(t / nc);
    if (clip) {
      if (!unmapBox(out, offset, A, a, rx, ry, opts.origWidth, opts.origHeight, box, 0)) continue;
    } else {
      box[0] = f32(out[offset + a]! / rx); box[1] = f32(out[offset + A + a]! / ry);
      box[2] = f32(out[offset + 2 * A + a]! / rx); box[3] = f32(out[offset + 3 * A + a]! / ry);
    }
    det.xyxy.set(box, n * 4);
    det.conf[n] = s;
    det.cls[n] = c;
    source[n] = a;
    n++;
  }
  return { xyxy: det.xyxy.slice(0, n * 4), conf: det.conf.slice(0, n), cls: det.cls.slice(0, n), source: source.slice(0, n) };
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
  if (opts.topk !== undefined) {
    // The class filter applies to the same selection, after the conf threshold.
    const det = selectTopK(output, offset, numAnchors, nc, opts, opts.topk);
    return opts.classes == null ? det : filterClasses(det, opts.classes, opts.maxDet);
  }
  if (opts.classes == null) return detect(output, offset, numAnchors, nc, opts, opts.maxDet);
  const det = detect(output, offset, numAnchors, nc, opts, Math.max(opts.maxDet, CLASS_FILTER_MIN_DET));
  return filterClasses(det, opts.classes, opts.maxDet);
}

/** The family's postprocess as options: NMS (agnostic or not) or the NMS-free top-k with its column map for `columns` score columns and `nc` classes. */
export function postprocessKind(family: ModelFamily, columns: number, nc: number): { agnostic?: boolean; topk?: number; clip?: boolean; columnClasses?: Int32Array } {
  const spec = postprocessSpec(family);
  if (spec.kind === 'topk') {
    const map = spec.columnClasses?.(columns, nc) ?? null;
    return { topk: spec.k, ...(spec.clip !== undefined ? { clip: spec.clip } : {}), ...(map ? { columnClasses: map } : {}) };
  }
  return spec.agnostic ? { agnostic: true } : {};
}
