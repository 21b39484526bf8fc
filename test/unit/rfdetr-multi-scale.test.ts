/**
 * RF-DETR's per-step multi-scale: Python's random.Random(seed) reproduced (MT19937, init_by_array,
 * random, getrandbits, choice, randint), the size list (11 sizes for n, 224..544), the size of each
 * optimizer step, and torch's bilinear interpolate (align_corners=False) that resizes the batch.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { interpolateBilinear } from '../../src/data/interpolate.ts';
import { rfdetrMultiScaleSizes, rfdetrStepSize } from '../../src/models/rfdetr/multi-scale.ts';
import { PyRandom } from '../../src/util/py-random.ts';

describe("Python's random.Random", () => {
  // Printed by CPython 3.11.7: random.Random(0).random() twice; Random(2**40 + 7): getrandbits(32),
  // random(), randint(384, 600); Random(123456789): randint(0, 5) ten times.
  it('draws what CPython draws for the same seed (one- and two-word seeds)', () => {
    const r0 = new PyRandom(0);
    assert.deepEqual([r0.random(), r0.random()], [0.8444218515250481, 0.7579544029403025]);
    const big = new PyRandom(2 ** 40 + 7);
    assert.deepEqual([big.getrandbits(32), big.random(), big.randint(384, 600)], [2635837658, 0.7473242567100844, 547]);
    const r = new PyRandom(123456789);
    assert.deepEqual(Array.from({ length: 10 }, () => r.randint(0, 5)), [5, 3, 4, 5, 4, 3, 2, 5, 3, 3]);
  });
});

describe('RF-DETR multi-scale', () => {
  it('sizes: (S/32 + o) x 32 for o in -5..5 (n: 224..544, 11 sizes); -3..4 without expanded scales; none under 64', () => {
    assert.deepEqual(rfdetrMultiScaleSizes(384, 32), [224, 256, 288, 320, 352, 384, 416, 448, 480, 512, 544]);
    assert.deepEqual(rfdetrMultiScaleSizes(704, 32).at(-1), 864);
    assert.deepEqual(rfdetrMultiScaleSizes(384, 32, false), [288, 320, 352, 384, 416, 448, 480, 512]);
    assert.deepEqual(rfdetrMultiScaleSizes(96, 32), [64, 96, 128, 160, 192, 224, 256]);
  });

  it("each optimizer step's size is random.Random(step).choice(sizes), as CPython 3.11.7 chose for steps 0..39", () => {
    const sizes = rfdetrMultiScaleSizes(384, 32);
    const python = [416, 288, 224, 320, 320, 512, 512, 384, 320, 448, 512, 448, 448, 352, 256, 320, 384, 480, 288, 544,
      544, 288, 288, 352, 416, 416, 320, 544, 256, 480, 480, 224, 256, 512, 480, 480, 384, 544, 544, 320];
    assert.deepEqual(python.map((_, step) => rfdetrStepSize(step, sizes)), python);
  });
});

describe("torch's bilinear interpolate (align_corners=False)", () => {
  const batch = (h: number, w: number, v: (c: number, y: number, x: number) => number, n = 1, c = 1) => {
    const data = new Float32Array(n * c * h * w);
    for (let p = 0; p < n * c; p++) for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) data[(p * h + y) * w + x] = v(p % c, y, x);
    return { dtype: 'float32' as const, dims: [n, c, h, w], data };
  };

  it('2x up: the outer rows repeat (source clamped at 0 and at the last row), the inner ones mix 1/4 and 3/4', () => {
    const out = interpolateBilinear(batch(1, 4, (_c, _y, x) => x * 4), 1, 8);
    // sources -0.25 -> 0, 0.25, 0.75, ..., 3.25 -> 3 (upper tap clamped): 0, 1, 3, 5, 7, 9, 11, 12
    assert.deepEqual([...out.data as Float32Array], [0, 1, 3, 5, 7, 9, 11, 12]);
  });

  it('2x down averages neighbour pairs; a constant stays constant at any size; the same size is returned as is', () => {
    const down = interpolateBilinear(batch(2, 4, (_c, y, x) => 10 * y + x), 1, 2);
    assert.deepEqual([...down.data as Float32Array], [5.5, 7.5]);
    const c = interpolateBilinear(batch(5, 7, (ch) => ch + 0.25, 2, 3), 13, 3);
    assert.deepEqual(c.dims, [2, 3, 13, 3]);
    for (let i = 0; i < c.data.length; i++) assert.equal(c.data[i], Math.floor(i / 39) % 3 + 0.25);
    const same = batch(4, 4, () => 1);
    assert.equal(interpolateBilinear(same, 4, 4), same);
  });

  it('a linear ramp maps onto the ramp of the source coordinates inside the image', () => {
    const out = interpolateBilinear(batch(16, 16, (_c, y, x) => 2 * y + x), 24, 40);
    const d = out.data as Float32Array;
    for (let y = 2; y < 22; y++) for (let x = 2; x < 38; x++) {
      const sy = (y + 0.5) * 16 / 24 - 0.5, sx = (x + 0.5) * 16 / 40 - 0.5;
      assert.ok(Math.abs(d[y * 40 + x]! - (2 * sy + sx)) < 1e-5, `${y},${x}`);
    }
  });
});
