/**
 * D-FINE's NMS-free postprocess of one image: sigmoid of the class logits, top-k over
 * the flattened queries x classes (k = min(max_det, Q * nc), descending), query = index div nc and
 * label = index mod nc, cxcywh -> xyxy with w, h clamped at 0, scaled to the original image (no
 * clipping), then score > conf (strict).
 */
import type { DetectionSet } from '../registry.ts';

const f32 = Math.fround;

export interface TopkOptions {
  conf: number;
  maxDet: number;
  origWidth: number;
  origHeight: number;
}

/** `logits` [Q, nc] and `boxes` [Q, 4] of one image, starting at query row `row0`. */
export function dfineTopk(logits: Float32Array, boxes: Float32Array, row0: number, queries: number, nc: number, opts: TopkOptions): DetectionSet {
  const n = queries * nc;
  const prob = new Float32Array(n);
  for (let k = 0; k < n; k++) prob[k] = f32(1 / (1 + Math.exp(-logits[row0 * nc + k]!)));
  const order = Array.from({ length: n }, (_, k) => k).sort((a, b) => prob[b]! - prob[a]! || a - b);
  const k = Math.min(opts.maxDet, n);
  const thr = f32(opts.conf);
  const W = opts.origWidth, H = opts.origHeight;
  const xyxy: number[] = [];
  const conf: number[] = [];
  const cls: number[] = [];
  for (let r = 0; r < k; r++) {
    const flat = order[r]!;
    const s = prob[flat]!;
    if (!(s > thr)) continue;
    const q = row0 + Math.floor(flat / nc);
    const [cx, cy, w, h] = [0, 1, 2, 3].map((c) => boxes[q * 4 + c]!) as [number, number, number, number];
    const hw = f32(0.5 * Math.max(w, 0)), hh = f32(0.5 * Math.max(h, 0));
    xyxy.push(f32(f32(cx - hw) * W), f32(f32(cy - hh) * H), f32(f32(cx + hw) * W), f32(f32(cy + hh) * H));
    conf.push(s);
    cls.push(flat % nc);
  }
  return { xyxy: Float32Array.from(xyxy), conf: Float32Array.from(conf), cls: Float32Array.from(cls) };
}
