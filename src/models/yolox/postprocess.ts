/**
 * YOLOX detection candidates of one image, from its `[N, 5+nc]` slot of the decoded
 * output (cx, cy, w, h in input pixels, objectness, class probabilities): score = obj * cls with
 * one label per anchor (the first maximum), strictly above `conf`; xyxy; and only when the letterbox
 * ratio is not 1, divided by float32(ratio), clamped to the image and stripped of empty boxes.
 * Per-class NMS, sorting and max_det follow in the shared predict path.
 */
import type { CandidateOptions, DetectionSet } from '../registry.ts';

const f32 = Math.fround;

export function yoloxCandidates(output: Float32Array, offset: number, rows: number, cols: number, opts: CandidateOptions): DetectionSet {
  const nc = cols - 5;
  const thr = f32(opts.conf);
  const picked: number[] = [];
  const labels: number[] = [];
  const scores: number[] = [];
  for (let a = 0; a < rows; a++) {
    const base = offset + a * cols;
    const obj = output[base + 4]!;
    let best = -Infinity;
    let cls = 0;
    for (let c = 0; c < nc; c++) {
      const s = f32(obj * output[base + 5 + c]!);
      if (s > best) { best = s; cls = c; }
    }
    if (best > thr) { picked.push(a); labels.push(cls); scores.push(best); }
  }
  const rescale = opts.ratio !== 1;
  const r = f32(opts.ratio);
  const W = opts.origWidth, H = opts.origHeight;
  const xyxy = new Float32Array(picked.length * 4);
  const conf = new Float32Array(picked.length);
  const cls = new Float32Array(picked.length);
  let n = 0;
  for (let k = 0; k < picked.length; k++) {
    const base = offset + picked[k]! * cols;
    const cx = output[base]!, cy = output[base + 1]!;
    const hw = f32(output[base + 2]! / 2), hh = f32(output[base + 3]! / 2);
    let x1 = f32(cx - hw), y1 = f32(cy - hh), x2 = f32(cx + hw), y2 = f32(cy + hh);
    if (rescale) {
      x1 = Math.min(Math.max(f32(x1 / r), 0), W); x2 = Math.min(Math.max(f32(x2 / r), 0), W);
      y1 = Math.min(Math.max(f32(y1 / r), 0), H); y2 = Math.min(Math.max(f32(y2 / r), 0), H);
      if (!(f32(x2 - x1) > 0) || !(f32(y2 - y1) > 0)) continue;
    }
    if (!Number.isFinite(x1 + y1 + x2 + y2) || !Number.isFinite(scores[k]!)) continue;
    xyxy[4 * n] = x1; xyxy[4 * n + 1] = y1; xyxy[4 * n + 2] = x2; xyxy[4 * n + 3] = y2;
    conf[n] = scores[k]!;
    cls[n] = labels[k]!;
    n++;
  }
  return { xyxy: xyxy.subarray(0, 4 * n), conf: conf.subarray(0, n), cls: cls.subarray(0, n) };
}
