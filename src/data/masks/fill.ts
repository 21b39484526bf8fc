/**
 * Polygon fill for training mask targets, as OpenCV's `fillPoly` on integer vertices is used by the
 * original (value 1, every ring of an instance into the same slot): a pixel is set when its centre
 * row crosses the ring inside (even-odd), with both end pixels of each span included, and every
 * pixel an edge passes through is set too, so thin rings still mark their outline.
 */
import { rint } from '../../util/math.ts';

/** Fills one ring (integer pixel vertices `x1 y1 x2 y2 ...`) with 1 into `out` (`h x w`, row-major) at `offset`. */
export function fillRing(ring: ArrayLike<number>, w: number, h: number, out: Float32Array, offset: number): void {
  const n = ring.length >> 1;
  if (n < 1) return;
  const set = (x: number, y: number): void => { if (x >= 0 && x < w && y >= 0 && y < h) out[offset + y * w + x] = 1; };
  let ymin = Infinity, ymax = -Infinity;
  for (let k = 0; k < n; k++) { ymin = Math.min(ymin, ring[2 * k + 1]!); ymax = Math.max(ymax, ring[2 * k + 1]!); }
  const xs: number[] = [];
  for (let y = Math.max(0, ymin); y <= Math.min(h - 1, ymax); y++) {
    xs.length = 0;
    for (let k = 0; k < n; k++) {
      const x0 = ring[2 * k]!, y0 = ring[2 * k + 1]!, x1 = ring[2 * ((k + 1) % n)]!, y1 = ring[2 * ((k + 1) % n) + 1]!;
      // Half-open in y so a vertex shared by two edges counts once.
      if ((y0 <= y && y < y1) || (y1 <= y && y < y0)) xs.push(x0 + ((y - y0) * (x1 - x0)) / (y1 - y0));
    }
    xs.sort((a, b) => a - b);
    for (let j = 0; j + 1 < xs.length; j += 2) {
      for (let x = Math.max(0, Math.ceil(xs[j]!)); x <= Math.min(w - 1, Math.floor(xs[j + 1]!)); x++) set(x, y);
    }
  }
  // The outline itself (Bresenham), as fillPoly draws the edges.
  for (let k = 0; k < n; k++) {
    let x0 = ring[2 * k]!, y0 = ring[2 * k + 1]!;
    const x1 = ring[2 * ((k + 1) % n)]!, y1 = ring[2 * ((k + 1) % n) + 1]!;
    const dx = Math.abs(x1 - x0), dy = -Math.abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    let err = dx + dy;
    for (;;) {
      set(x0, y0);
      if (x0 === x1 && y0 === y1) break;
      const e2 = 2 * err;
      if (e2 >= dy) { err += dy; x0 += sx; }
      if (e2 <= dx) { err += dx; y0 += sy; }
    }
  }
}

/**
 * The training mask of one instance at `1 / ratio` of the `size x size` input: its rings (input
 * pixels) scaled by `(W / ratio) / W`, rounded to integers, and filled into `out` at `offset`.
 */
export function rasterizeTarget(rings: readonly ArrayLike<number>[], size: number, ratio: number, out: Float32Array, offset: number): void {
  const m = size / ratio;
  for (const ring of rings) {
    const r = Int32Array.from(ring, (v) => rint(v * (m / size)));
    fillRing(r, m, m, out, offset);
  }
}
