/**
 * Host-side pieces every DETR criterion shares: ground-truth and match records, and the box
 * arithmetic of matching costs and detached IoUs, in float32 steps as PyTorch computes them (so
 * near-ties resolve as the original's do).
 */
import type { HostTensor } from '../../graph/tensor.ts';

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

/** An output set for matching: `logits` `[B, Q, nc]`, `boxes` `[B, Q, 4]` cxcywh. */
export interface MatchInput {
  logits: Float32Array;
  boxes: Float32Array;
  batch: number;
  queries: number;
  nc: number;
}

const f = Math.fround;

/** The contract's target rows `[cls, x1, y1, x2, y2]` (0..1) as the original's per-image labels and cxcywh boxes. */
export function imageTargets(targets: HostTensor): ImageTargets[] {
  const [B, M] = targets.dims as [number, number, number];
  const d = targets.data as Float32Array;
  return Array.from({ length: B }, (_, img) => {
    const labels: number[] = [];
    const boxes: number[] = [];
    for (let r = 0; r < M; r++) {
      const o = (img * M + r) * 5;
      const [cls, x1, y1, x2, y2] = [d[o]!, d[o + 1]!, d[o + 2]!, d[o + 3]!, d[o + 4]!];
      if (cls < 0 || !(x2 > x1 && y2 > y1)) continue; // padding, and the original's w > 0, h > 0 filter
      labels.push(cls);
      const clamp = (v: number): number => Math.min(1, Math.max(0, Math.fround(v)));
      boxes.push(clamp((x1 + x2) / 2), clamp((y1 + y2) / 2), clamp(x2 - x1), clamp(y2 - y1));
    }
    return { labels, boxes: Float32Array.from(boxes) };
  });
}

/** cxcywh -> xyxy with the size clamped at 0, in float32 steps (`box_cxcywh_to_xyxy`). */
export function cxcywhToXyxy(b: ArrayLike<number>, o: number): [number, number, number, number] {
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

/** IoU of two cxcywh boxes (`box_iou`, no epsilon), float32 steps. */
export function boxIou(p: ArrayLike<number>, po: number, g: ArrayLike<number>, go: number): number {
  const a = cxcywhToXyxy(p, po);
  const b = cxcywhToXyxy(g, go);
  const areaA = f(f(a[2] - a[0]) * f(a[3] - a[1]));
  const areaB = f(f(b[2] - b[0]) * f(b[3] - b[1]));
  const iw = Math.max(f(Math.min(a[2], b[2]) - Math.max(a[0], b[0])), 0);
  const ih = Math.max(f(Math.min(a[3], b[3]) - Math.max(a[1], b[1])), 0);
  const inter = f(iw * ih);
  return f(inter / f(f(areaA + areaB) - inter));
}
