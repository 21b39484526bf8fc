/**
 * Outer borders of a binary mask as OpenCV's `findContours(RETR_EXTERNAL, CHAIN_APPROX_SIMPLE)`
 * returns them: each 8-connected component's outer border is followed from its first pixel in raster
 * order (the topmost, then leftmost), counter-clockwise on screen (down the left side first), and
 * only the end points of horizontal, vertical and diagonal runs are kept. Holes are not followed.
 */

/** Moore-neighbour directions, counter-clockwise on screen starting east: E, NE, N, NW, W, SW, S, SE. */
const DX = [1, 1, 0, -1, -1, -1, 0, 1];
const DY = [0, -1, -1, -1, 0, 1, 1, 1];

/** Shoelace area of a closed polygon given as flat x,y pairs (absolute value). */
export function polygonArea(pts: ArrayLike<number>): number {
  const n = pts.length / 2;
  let a = 0;
  for (let i = 0, j = n - 1; i < n; j = i++) a += pts[2 * j]! * pts[2 * i + 1]! - pts[2 * i]! * pts[2 * j + 1]!;
  return Math.abs(a) / 2;
}

/**
 * Follows the outer border of the component containing (x0, y0), its first pixel in raster order;
 * marks the pixels it visits in `seen` (component labels) and returns the compressed border.
 */
function traceBorder(px: Uint8Array, W: number, H: number, x0: number, y0: number): number[] {
  const on = (x: number, y: number): boolean => x >= 0 && y >= 0 && x < W && y < H && px[y * W + x] !== 0;
  const border: number[] = [x0, y0];
  // The pixel west of the first one is background; search counter-clockwise from the west neighbour.
  let x = x0, y = y0;
  let back = 4; // direction pointing to the background neighbour we came from
  let found = -1;
  for (let k = 0; k < 8; k++) {
    const d = (back + 1 + k) % 8;
    if (on(x + DX[d]!, y + DY[d]!)) { found = d; break; }
  }
  if (found < 0) return border; // a single pixel
  const startDir = found;
  for (;;) {
    x += DX[found]!; y += DY[found]!;
    // Next search starts just past the neighbour opposite the move, turning counter-clockwise.
    back = (found + 4) % 8;
    let next = -1;
    for (let k = 0; k < 8; k++) {
      const d = (back + 1 + k) % 8;
      if (on(x + DX[d]!, y + DY[d]!)) { next = d; break; }
    }
    if (x === x0 && y === y0 && next === startDir) break;
    border.push(x, y);
    found = next;
  }
  return compress(border);
}

/** Keeps the points where the direction of the closed chain changes (CHAIN_APPROX_SIMPLE). */
function compress(chain: number[]): number[] {
  const n = chain.length / 2;
  if (n <= 2) return chain;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const p = (i + n - 1) % n, q = (i + 1) % n;
    const dx1 = chain[2 * i]! - chain[2 * p]!, dy1 = chain[2 * i + 1]! - chain[2 * p + 1]!;
    const dx2 = chain[2 * q]! - chain[2 * i]!, dy2 = chain[2 * q + 1]! - chain[2 * i + 1]!;
    if (dx1 !== dx2 || dy1 !== dy2 || i === 0) out.push(chain[2 * i]!, chain[2 * i + 1]!);
  }
  return out;
}

/**
 * The outer border with the largest enclosed area (the first on ties), as flat x,y pairs in pixel
 * coordinates; empty for an empty mask.
 */
export function largestOuterContour(px: Uint8Array, W: number, H: number): number[] {
  const label = new Int32Array(W * H);
  let best: number[] = [];
  let bestArea = -1;
  let next = 0;
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const i = y * W + x;
      if (!px[i] || label[i]) continue;
      next++;
      fillComponent(px, label, W, H, x, y, next);
      const c = traceBorder(px, W, H, x, y);
      const area = polygonArea(c);
      if (area > bestArea) { best = c; bestArea = area; }
    }
  }
  return best;
}

/** Labels the 8-connected component of (x, y), so it is traced once; a hole's inner pixels are never traced as borders. */
function fillComponent(px: Uint8Array, label: Int32Array, W: number, H: number, x: number, y: number, id: number): void {
  const stack = [y * W + x];
  label[y * W + x] = id;
  while (stack.length) {
    const i = stack.pop()!;
    const cx = i % W, cy = (i - cx) / W;
    for (let d = 0; d < 8; d++) {
      const nx = cx + DX[d]!, ny = cy + DY[d]!;
      if (nx < 0 || ny < 0 || nx >= W || ny >= H) continue;
      const j = ny * W + nx;
      if (px[j] && !label[j]) { label[j] = id; stack.push(j); }
    }
  }
}
