/** The D-FINE / DEIM train fixture's targets as the criterion and the training contract take them. */
import type { HostTensor } from '../../src/graph/tensor.ts';
import type { PlainTensor } from '../../src/train/check.ts';
import type { ImageTargets } from '../../src/models/dfine/matcher.ts';

/**
 * Rows `[class, cx, cy, w, h]` in input pixels (`[B, M, 5]`; w or h = 0 is padding) as the original's
 * on_forward keeps them: the non-padding rows, boxes / `size` clamped to 0..1.
 */
export function fixtureTargets(rows: HostTensor, size = 640): ImageTargets[] {
  const [B, M] = rows.dims as [number, number, number];
  const d = rows.data as Float32Array;
  return Array.from({ length: B }, (_, img) => {
    const labels: number[] = [];
    const boxes: number[] = [];
    for (let r = 0; r < M; r++) {
      const o = (img * M + r) * 5;
      if (!(d[o + 3]! > 0 && d[o + 4]! > 0)) continue;
      labels.push(d[o]!);
      for (let k = 1; k < 5; k++) boxes.push(Math.min(1, Math.max(0, Math.fround(d[o + k]! / size))));
    }
    return { labels, boxes: Float32Array.from(boxes) };
  });
}

/** The fixture's pixel [class, cx, cy, w, h] rows as the contract's normalised [class, x1, y1, x2, y2] (padding -1). */
export function contractTargets(rows: HostTensor, size: number): PlainTensor {
  const d = rows.data as Float32Array;
  const out = new Float32Array(d.length);
  for (let r = 0; r < d.length / 5; r++) {
    const [c, cx, cy, w, h] = d.subarray(r * 5, r * 5 + 5) as unknown as number[];
    if (!(w! > 0 && h! > 0)) { out[r * 5] = -1; continue; }
    out.set([c!, (cx! - w! / 2) / size, (cy! - h! / 2) / size, (cx! + w! / 2) / size, (cy! + h! / 2) / size], r * 5);
  }
  return { data: out, dims: [...rows.dims] };
}
