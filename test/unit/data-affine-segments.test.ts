/**
 * Polygon rings through the random affine (src/data/affine.ts `affineSegments`, the segment path of
 * the original's random perspective): each ring resampled to 1000 points, warped by the same matrix
 * as the image, the box recomputed from the warped points on the canvas, the ring clipped to it.
 * The expected rings and boxes are worked out here from the vertices: an affine map commutes with
 * linear interpolation, so warping the vertices first and interpolating after must give the same
 * points the implementation gets by resampling first.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { affineSegments, randomAffine, SEGMENT_POINTS, type Affine } from '../../src/data/affine.ts';
import { mulberry32 } from '../../src/data/augment.ts';

const S = 100;

/** The vertices mapped by `m`, then the closed ring interpolated at `n` points even in vertex index. */
function expectedRing(vertices: number[][], m: Affine, n = SEGMENT_POINTS): number[][] {
  const [a, b, c, d, e, f] = m;
  const w = vertices.map(([x, y]) => [a * x! + b * y! + c, d * x! + e * y! + f]);
  w.push(w[0]!);
  return Array.from({ length: n }, (_, j) => {
    const t = (j * (w.length - 1)) / (n - 1);
    const i = Math.min(Math.floor(t), w.length - 2), u = t - i;
    return [0, 1].map((q) => w[i]![q]! * (1 - u) + w[i + 1]![q]! * u);
  });
}

const points = (r: Float32Array): number[][] => Array.from({ length: r.length / 2 }, (_, i) => [r[2 * i]!, r[2 * i + 1]!]);
const flat = (v: number[][]): Float32Array => Float32Array.from(v.flat());

function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < got.length; i++) assert.ok(Math.abs(got[i]! - want[i]!) <= tol, `${what}[${i}]: ${got[i]} vs ${want[i]}`);
}

describe('random affine on polygon rings', () => {
  it('scale + translation: the ring is the warped square resampled, the box its warped corners, the class kept', () => {
    const sq = [[10, 20], [40, 20], [40, 50], [10, 50]];
    const m: Affine = [1.5, 0, 7, 0, 1.5, -4];
    const { boxes, segs } = affineSegments(Float32Array.of(3, 10, 20, 40, 50), [flat(sq)], m, S, S);
    assert.equal(segs[0]!.length, 2 * SEGMENT_POINTS);
    assertClose(segs[0]!, expectedRing(sq, m).flat(), 1e-4, 'ring');
    // corners (10, 20) -> (22, 26), (40, 50) -> (67, 71)
    assertClose(boxes, [3, 22, 26, 67, 71], 1e-4, 'box');
  });

  it('rotation about the image centre: the box is the extent of the rotated vertices', () => {
    const tri = [[40, 30], [70, 45], [45, 65]]; // 999 is a multiple of 3: every vertex is a sample
    const th = (30 * Math.PI) / 180, c = Math.cos(th), s = Math.sin(th);
    const m: Affine = [c, -s, 50 - 50 * c + 50 * s, s, c, 50 - 50 * s - 50 * c];
    const rot = tri.map(([x, y]) => [c * (x! - 50) - s * (y! - 50) + 50, s * (x! - 50) + c * (y! - 50) + 50]);
    const xs = rot.map((p) => p[0]!), ys = rot.map((p) => p[1]!);
    const { boxes, segs } = affineSegments(Float32Array.of(1, 40, 30, 70, 65), [flat(tri)], m, S, S);
    assertClose(segs[0]!, expectedRing(tri, m).flat(), 1e-4, 'ring');
    assertClose(boxes, [1, Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)], 1e-4, 'box');
    // the vertices themselves are on the ring
    for (const [x, y] of rot) assert.ok(points(segs[0]!).some(([px, py]) => Math.hypot(px! - x!, py! - y!) < 1e-3), `vertex (${x}, ${y}) on the ring`);
  });

  it('a ring pushed off the left edge: box from the points left on the canvas, ring clipped to it; fully off: an empty box', () => {
    const sq = [[10, 20], [50, 20], [50, 60], [10, 60]];
    const m: Affine = [1, 0, -30, 0, 1, 0]; // x in [-20, 20]
    const { boxes, segs } = affineSegments(Float32Array.of(0, 10, 20, 50, 60, 0, 10, 20, 50, 60), [flat(sq), flat(sq)], m, S, S);
    const want = expectedRing(sq, m);
    const inside = want.filter(([x, y]) => x! >= 0 && y! >= 0 && x! <= S && y! <= S);
    const x1 = Math.min(...inside.map((p) => p[0]!));
    assert.ok(x1 >= 0 && x1 < 0.2, `left edge of the box near the canvas edge: ${x1}`);
    assertClose(boxes.subarray(0, 5), [0, x1, 20, 20, 60], 1e-4, 'box');
    assertClose(segs[0]!, want.map(([x, y]) => [Math.min(Math.max(x!, x1), 20), y!]).flat(), 1e-4, 'clipped ring');
    const gone = affineSegments(Float32Array.of(2, 10, 20, 50, 60), [flat(sq)], [1, 0, -80, 0, 1, 0], S, S);
    assertClose(gone.boxes, [2, 0, 0, 0, 0], 0, 'box of a ring off the canvas');
  });

  it('randomAffine warps the rings with the image and takes their boxes; boxes alone go the corner path', () => {
    const img = { data: new Uint8Array(S * S * 3).fill(114), width: S, height: S };
    const tri = [[40, 30], [70, 45], [45, 65]];
    const box = Float32Array.of(0, 40, 30, 70, 65);
    const hyp = { degrees: 20, translate: 0.1, scale: [0.8, 1.2] as const, shear: 3 };
    const withRings = randomAffine({ img, boxes: box, segs: [flat(tri)] }, S, hyp, mulberry32(4));
    const plain = randomAffine({ img, boxes: box }, S, hyp, mulberry32(4));
    assert.equal(plain.segs, undefined);
    // same draws: the ring's box lies inside the bound of the warped box corners, and is not it (rotation)
    const [, px1, py1, px2, py2] = plain.boxes, [, rx1, ry1, rx2, ry2] = withRings.boxes;
    assert.ok(rx1! >= px1! - 1e-4 && ry1! >= py1! - 1e-4 && rx2! <= px2! + 1e-4 && ry2! <= py2! + 1e-4, 'ring box within the corner box');
    assert.ok((rx2! - rx1!) * (ry2! - ry1!) < 0.95 * (px2! - px1!) * (py2! - py1!), 'the ring box is tighter than the corner box');
  });
});
