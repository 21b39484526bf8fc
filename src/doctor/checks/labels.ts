/** labels.*: the boxes of each split as training reads them. */
import { basename } from 'node:path';
import { MAX_IOU_BOXES, type DoctorConfig } from '../config.ts';
import type { Finding } from '../findings.ts';
import { fixed, general, percent } from '../format.ts';
import { PyFloat, type PyValue } from '../pyjson.ts';
import type { DatasetSnapshot, ImageRecord, SplitSnapshot } from '../snapshot.ts';
import type { Check } from './types.ts';

const f32 = Math.fround;

/** A box whose cx, cy, w and h all lie in [0, 1] (within float slack); the geometry checks skip the rest. */
function plausible(b: Float32Array, o: number, eps: number): boolean {
  const lo = f32(-eps), hi = f32(1 + eps);
  for (let k = 1; k < 5; k++) { const v = b[o + k]!; if (v < lo || v > hi) return false; }
  return true;
}

/** Counts, per split, the boxes `test` flags and the label files holding them. */
function perBox(snap: DatasetSnapshot, cfg: DoctorConfig, test: (b: Float32Array, o: number, r: ImageRecord) => boolean,
  finding: (n: number, split: SplitSnapshot, total: number) => Omit<Finding, 'split' | 'paths' | 'count'> | null): Finding[] {
  const out: Finding[] = [];
  for (const s of snap.splits) {
    const files: string[] = [];
    let n = 0, total = 0;
    for (const r of s.records) {
      total += r.n;
      let hit = 0;
      for (let i = 0; i < r.n; i++) if (test(r.boxes, i * 5, r)) hit++;
      if (hit) { files.push(r.labelPath); n += hit; }
    }
    if (!n) continue;
    const f = finding(n, s, total);
    if (f) out.push({ ...f, split: s.name, paths: files.slice(0, cfg.maxExamples), count: n });
  }
  return out;
}

const scanned = (r: ImageRecord): boolean => Boolean(r.scan?.ok && r.scan.width && r.scan.height);

/** Same-class pairs with IoU above `thr` among `boxes` (rows of 5). */
function sameClassPairs(boxes: Float32Array, n: number, thr: number): number {
  let pairs = 0;
  for (let i = 0; i < n; i++) {
    const a = i * 5;
    const ax1 = boxes[a + 1]! - boxes[a + 3]! / 2, ay1 = boxes[a + 2]! - boxes[a + 4]! / 2;
    const ax2 = boxes[a + 1]! + boxes[a + 3]! / 2, ay2 = boxes[a + 2]! + boxes[a + 4]! / 2;
    const aArea = Math.max(boxes[a + 3]!, 0) * Math.max(boxes[a + 4]!, 0);
    for (let j = i + 1; j < n; j++) {
      const b = j * 5;
      if (boxes[a] !== boxes[b]) continue;
      const bx1 = boxes[b + 1]! - boxes[b + 3]! / 2, by1 = boxes[b + 2]! - boxes[b + 4]! / 2;
      const bx2 = boxes[b + 1]! + boxes[b + 3]! / 2, by2 = boxes[b + 2]! + boxes[b + 4]! / 2;
      const inter = Math.max(Math.min(ax2, bx2) - Math.max(ax1, bx1), 0) * Math.max(Math.min(ay2, by2) - Math.max(ay1, by1), 0);
      const union = aArea + Math.max(boxes[b + 3]!, 0) * Math.max(boxes[b + 4]!, 0) - inter;
      if (union > 0 && inter / union > thr) pairs++;
    }
  }
  return pairs;
}

/** numpy's default (linear) percentile of `values`. */
function percentile(values: number[], q: number): number {
  const a = [...values].sort((x, y) => x - y);
  const pos = (q / 100) * (a.length - 1);
  const lo = Math.floor(pos);
  return lo + 1 < a.length ? a[lo]! + (a[lo + 1]! - a[lo]!) * (pos - lo) : a[lo]!;
}

export const LABELS_CHECKS: readonly Check[] = [
  {
    id: 'labels.syntax', scan: false,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const bad: Array<{ file: string; why: string }> = [];
      for (const r of s.records) for (const i of r.issues) bad.push({ file: r.labelPath, why: `line ${i.lineNo}: ${i.reason}` });
      if (!bad.length) return [];
      const sample = bad.slice(0, 3).map((b) => `${basename(b.file)} (${b.why})`).join('; ');
      return [{
        checkId: 'labels.syntax', severity: 'error', message: `${bad.length} malformed label line(s), e.g. ${sample}.`,
        split: s.name, paths: [...new Set(bad.map((b) => b.file))].slice(0, cfg.maxExamples), count: bad.length,
      }];
    }),
  },
  {
    id: 'labels.polygon_line', scan: false,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const rows = s.records.reduce((k, r) => k + r.polygonLines, 0);
      if (!rows) return [];
      return [{
        checkId: 'labels.polygon_line', severity: 'info',
        message: `${rows} label line(s) have more than 5 fields and are read as polygons (the box is derived from their extent), exactly as training does. If this is most of the dataset, it is probably a segmentation export.`,
        split: s.name, paths: s.records.filter((r) => r.polygonLines).slice(0, cfg.maxExamples).map((r) => r.labelPath), count: rows,
      }];
    }),
  },
  {
    id: 'labels.class_out_of_range', scan: false,
    run: (snap, cfg) => {
      const nc = snap.nc;
      if (nc === null) return [];
      return perBox(snap, cfg, (b, o) => b[o]! < 0 || b[o]! >= nc,
        (n) => ({ checkId: 'labels.class_out_of_range', severity: 'error', message: `${n} box(es) use class ids outside [0, ${nc}).` }));
    },
  },
  {
    id: 'labels.coords_out_of_range', scan: false,
    run: (snap, cfg) => {
      const raw = perBox(snap, cfg, (b, o) => !plausible(b, o, cfg.coordTolerance),
        (n) => ({ checkId: 'labels.coords_out_of_range', severity: 'error', message: `${n} box(es) have coordinates outside [0, 1]; labels may be in pixel coordinates instead of normalized.` }));
      const lo = f32(-cfg.boxSpillTolerance), hi = f32(1 + cfg.boxSpillTolerance);
      const spill = perBox(snap, cfg, (b, o) => {
        if (!plausible(b, o, cfg.coordTolerance)) return false;
        const cx = b[o + 1]!, cy = b[o + 2]!, hw = f32(b[o + 3]! / 2), hh = f32(b[o + 4]! / 2);
        return f32(cx - hw) < lo || f32(cy - hh) < lo || f32(cx + hw) > hi || f32(cy + hh) > hi;
      }, (n) => ({ checkId: 'labels.coords_out_of_range', severity: 'warning', message: `${n} box(es) extend past the image edge (center +/- size/2 spills outside [0, 1]).` }));
      return [...raw, ...spill];
    },
  },
  {
    id: 'labels.degenerate_box', scan: false,
    run: (snap, cfg) => perBox(snap, cfg, (b, o) => b[o + 3]! <= 0 || b[o + 4]! <= 0,
      (n) => ({ checkId: 'labels.degenerate_box', severity: 'error', message: `${n} box(es) have zero or negative width/height.` })),
  },
  {
    id: 'labels.tiny_object', scan: false,
    run: (snap, cfg) => perBox(snap, cfg, (b, o, r) => {
      const w = b[o + 3]!, h = b[o + 4]!;
      if (!(w > 0 && h > 0) || !plausible(b, o, cfg.coordTolerance)) return false;
      let pw = w * cfg.imgsz, ph = h * cfg.imgsz;
      if (scanned(r)) {
        // The letterbox scale: the long side becomes imgsz.
        const scale = cfg.imgsz / Math.max(r.scan!.width, r.scan!.height);
        pw = w * r.scan!.width * scale;
        ph = h * r.scan!.height * scale;
      }
      return Math.min(pw, ph) < cfg.tinyBoxPx;
    }, (n, _s, total) => ({
      checkId: 'labels.tiny_object', severity: 'warning',
      message: `${n} box(es) (${fixed((100 * n) / Math.max(total, 1), 1)}%) are smaller than ${general(cfg.tinyBoxPx)} px at imgsz=${cfg.imgsz}; they contribute almost nothing to training.`,
      details: new Map<string, PyValue>([['imgsz', cfg.imgsz], ['threshold_px', new PyFloat(cfg.tinyBoxPx)]]),
    })),
  },
  {
    id: 'labels.huge_box', scan: false,
    run: (snap, cfg) => perBox(snap, cfg, (b, o) => f32(b[o + 3]! * b[o + 4]!) > f32(cfg.hugeBoxArea) && plausible(b, o, cfg.coordTolerance),
      (n) => ({ checkId: 'labels.huge_box', severity: 'warning', message: `${n} box(es) cover more than ${percent(cfg.hugeBoxArea, 0)} of the image.` })),
  },
  {
    id: 'labels.extreme_aspect', scan: false,
    run: (snap, cfg) => perBox(snap, cfg, (b, o, r) => {
      let w = b[o + 3]!, h = b[o + 4]!;
      // Without the image size the normalised ratio is off by the image's aspect: double the threshold so --fast never over-reports.
      let threshold = cfg.extremeBoxAspect * 2;
      if (scanned(r)) { w *= r.scan!.width; h *= r.scan!.height; threshold = cfg.extremeBoxAspect; }
      return w > 0 && h > 0 && Math.max(w, h) / Math.min(w, h) > threshold && plausible(b, o, cfg.coordTolerance);
    }, (n) => ({
      checkId: 'labels.extreme_aspect', severity: 'warning',
      message: `${n} box(es) have an aspect ratio beyond ${general(snap.imagesScanned ? cfg.extremeBoxAspect : cfg.extremeBoxAspect * 2)}:1 (often annotation slips).`,
    })),
  },
  {
    id: 'labels.duplicate_box', scan: false,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const files: string[] = [];
      let pairs = 0;
      for (const r of s.records) {
        const keep: number[] = [];
        for (let i = 0; i < r.n && keep.length < MAX_IOU_BOXES * 5; i++) if (plausible(r.boxes, i * 5, cfg.coordTolerance)) keep.push(...r.boxes.subarray(i * 5, i * 5 + 5));
        if (keep.length < 10) continue;
        const p = sameClassPairs(Float32Array.from(keep), keep.length / 5, cfg.duplicateBoxIou);
        if (p) { files.push(r.labelPath); pairs += p; }
      }
      return pairs ? [{
        checkId: 'labels.duplicate_box', severity: 'warning',
        message: `${pairs} pair(s) of same-class boxes overlap with IoU > ${general(cfg.duplicateBoxIou)} (likely double annotations).`,
        split: s.name, paths: files.slice(0, cfg.maxExamples), count: pairs,
      }] : [];
    }),
  },
  {
    id: 'labels.crowded_image', scan: false,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const counts = s.records.map((r) => r.n);
      if (counts.length < 20 || counts.reduce((m, c) => Math.max(m, c), 0) < cfg.crowdedMinObjects) return [];
      const thr = Math.max(percentile(counts, 99) * 3, cfg.crowdedMinObjects);
      const crowded = s.records.filter((r) => r.n > thr);
      return crowded.length ? [{
        checkId: 'labels.crowded_image', severity: 'info',
        message: `${crowded.length} image(s) have an unusually high object count (> ${fixed(thr, 0)}); worth a manual look.`,
        split: s.name, paths: crowded.slice(0, cfg.maxExamples).map((r) => r.path), count: crowded.length,
      }] : [];
    }),
  },
  {
    id: 'labels.identical_files', scan: false,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const groups = new Map<string, string[]>();
      for (const r of s.records) {
        if (r.labelDigest === null || r.n === 0) continue;
        const g = groups.get(r.labelDigest);
        if (g) g.push(r.labelPath); else groups.set(r.labelDigest, [r.labelPath]);
      }
      const suspicious = [...groups.values()].filter((g) => g.length >= cfg.identicalLabelFiles);
      if (!suspicious.length) return [];
      const biggest = suspicious.reduce((m, g) => (g.length > m.length ? g : m));
      return [{
        checkId: 'labels.identical_files', severity: 'warning',
        message: `${suspicious.length} group(s) of byte-identical non-empty label files (largest: ${biggest.length} files) - often a copy-paste export error.`,
        split: s.name, paths: biggest.slice(0, cfg.maxExamples), count: suspicious.reduce((k, g) => k + g.length, 0),
      }];
    }),
  },
];
