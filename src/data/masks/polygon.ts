/**
 * Polygon rings to masks as pycocotools' `frPyObjects` (its C `rleFrPoly`) rasterises them for
 * mask ground truth: the ring is scaled by 5 and rounded, every edge walked one step at a time along
 * its longer axis, and each crossing of a (downsampled) pixel column marks where the column's run
 * of set pixels starts or ends. The result is column-major in pycocotools; here it is returned as
 * this package's row-major run lengths (rle.ts).
 */
import { encodeRuns } from './rle.ts';

const SCALE = 5;

/** Column-major toggle positions (x * h + y) of one ring `[x1, y1, x2, y2, ...]` in pixels. */
function ringToggles(xy: ArrayLike<number>, h: number, w: number): number[] {
  const k = xy.length >> 1;
  const x = new Int32Array(k + 1), y = new Int32Array(k + 1);
  // C casts truncate toward zero.
  for (let j = 0; j < k; j++) { x[j] = Math.trunc(SCALE * xy[2 * j]! + 0.5); y[j] = Math.trunc(SCALE * xy[2 * j + 1]! + 0.5); }
  x[k] = x[0]!; y[k] = y[0]!;
  const u: number[] = [], v: number[] = [];
  for (let j = 0; j < k; j++) {
    let xs = x[j]!, xe = x[j + 1]!, ys = y[j]!, ye = y[j + 1]!;
    const dx = Math.abs(xe - xs), dy = Math.abs(ys - ye);
    const flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) { [xs, xe] = [xe, xs]; [ys, ye] = [ye, ys]; }
    // A repeated vertex (dx = dy = 0) is one point; C would divide 0 by 0 and add 0 * NaN.
    const s = dx >= dy ? (dx ? (ye - ys) / dx : 0) : (xe - xs) / dy;
    if (dx >= dy) {
      for (let d = 0; d <= dx; d++) { const t = flip ? dx - d : d; u.push(t + xs); v.push(Math.trunc(ys + s * t + 0.5)); }
    } else {
      for (let d = 0; d <= dy; d++) { const t = flip ? dy - d : d; v.push(t + ys); u.push(Math.trunc(xs + s * t + 0.5)); }
    }
  }
  const out: number[] = [];
  for (let j = 1; j < u.length; j++) {
    if (u[j] === u[j - 1]) continue;
    const xd = ((u[j]! < u[j - 1]! ? u[j]! : u[j]! - 1) + 0.5) / SCALE - 0.5;
    if (Math.floor(xd) !== xd || xd < 0 || xd > w - 1) continue;
    let yd = ((v[j]! < v[j - 1]! ? v[j]! : v[j - 1]!) + 0.5) / SCALE - 0.5;
    yd = Math.ceil(yd < 0 ? 0 : yd > h ? h : yd);
    out.push(xd * h + yd);
  }
  return out;
}

/**
 * The mask (row-major run lengths, `h x w`) of an instance given as rings in pixel coordinates:
 * each ring rasterised as pycocotools does, the rings' masks merged by union (pycocotools `merge`).
 * Coordinates are clamped to the image first, as the original's COCO-style index clamps them.
 */
export function ringsToRuns(rings: readonly ArrayLike<number>[], h: number, w: number): Int32Array {
  const px = new Uint8Array(h * w);
  for (const ring of rings) {
    if (ring.length < 6) continue;
    const c = Float64Array.from(ring, (v, i) => Math.min(Math.max(v, 0), i % 2 ? h : w));
    // A toggle at the same place twice cancels (pycocotools merges the zero-length run away).
    const toggles = ringToggles(c, h, w).sort((a, b) => a - b);
    let on = false, start = 0;
    for (let i = 0; i <= toggles.length; i++) {
      const p = i < toggles.length ? Math.min(toggles[i]!, h * w) : h * w;
      if (on) for (let q = start; q < p; q++) px[(q % h) * w + Math.floor(q / h)] = 1;
      on = !on;
      start = p;
    }
  }
  return encodeRuns(px);
}
