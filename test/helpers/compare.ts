/** Numeric comparison of detector outputs `[B, 4+nc, A]`: box rows vs score rows. */
import type { HostTensor } from '../../src/graph/tensor.ts';
import type { Results } from '../../src/predict/results.ts';

/**
 * `skipAnchors` leaves out whole columns, keyed `image * A + anchor` (a DETR query slot whose
 * proposal traded places with a near-tied one holds another object's values).
 */
export function maxErrors(actual: HostTensor, expected: HostTensor, options: { skipAnchors?: ReadonlySet<number> } = {}): { box: number; score: number } {
  if (actual.dims.join(',') !== expected.dims.join(',')) throw new Error(`shape [${actual.dims}] != [${expected.dims}]`);
  const [, rows, anchors] = expected.dims as [number, number, number];
  const a = actual.data as Float32Array;
  const e = expected.data as Float32Array;
  const skip = options.skipAnchors;
  let box = 0;
  let score = 0;
  for (let i = 0; i < e.length; i++) {
    if (skip?.has(Math.floor(i / (rows * anchors)) * anchors + (i % anchors))) continue;
    const d = Math.abs(a[i]! - e[i]!);
    if (Number.isNaN(d)) return { box: NaN, score: NaN };
    if (Math.floor(i / anchors) % rows < 4) box = Math.max(box, d); else score = Math.max(score, d);
  }
  return { box, score };
}

/** Relative L2 error ||a - b|| / ||b||. */
export function relL2(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let k = 0; k < b.length; k++) {
    num += (a[k]! - b[k]!) ** 2;
    den += b[k]! ** 2;
  }
  return Math.sqrt(num / Math.max(den, 1e-30));
}

/** Fraction of `ref`'s detections that have a same-class detection in `got` with IoU >= 0.5. */
export function recall(got: Results, ref: Results): number {
  let hit = 0;
  for (let i = 0; i < ref.boxes.length; i++) {
    const a = ref.boxes.xyxy[i]!;
    for (let j = 0; j < got.boxes.length; j++) {
      if (got.boxes.clsData[j] !== ref.boxes.clsData[i]) continue;
      const b = got.boxes.xyxy[j]!;
      const w = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!));
      const h = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
      const inter = w * h;
      if (inter / ((a[2]! - a[0]!) * (a[3]! - a[1]!) + (b[2]! - b[0]!) * (b[3]! - b[1]!) - inter) >= 0.5) { hit++; break; }
    }
  }
  return hit / ref.boxes.length;
}

/**
 * Gradients against reference ones: the worst relative L2 over those whose reference norm exceeds
 * `tinyNorm`, and the keys of the others (rounding noise themselves) whose absolute L2 distance
 * exceeds `absolute`.
 */
export function gradientDistances(ours: Iterable<[string, ArrayLike<number>]>, reference: (key: string) => ArrayLike<number>, tinyNorm: number, absolute: number): { worst: number; offAbsolute: string[] } {
  let worst = 0;
  const offAbsolute: string[] = [];
  for (const [key, g] of ours) {
    const ref = reference(key);
    let norm = 0;
    for (let k = 0; k < ref.length; k++) norm += ref[k]! ** 2;
    norm = Math.sqrt(norm);
    if (norm > tinyNorm) worst = Math.max(worst, relL2(g, ref));
    else if (relL2(g, ref) * norm >= absolute) offAbsolute.push(`${key}: |d| ${relL2(g, ref) * norm}`);
  }
  return { worst, offAbsolute };
}
