import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { letterbox, letterboxGeometry, letterboxInto, resizeBilinear } from '../../src/data/letterbox.ts';

function randomImage(w: number, h: number, seed: number): RgbImage {
  const data = new Uint8Array(w * h * 3);
  let s = seed >>> 0;
  for (let i = 0; i < data.length; i++) { s = (s * 1664525 + 1013904223) >>> 0; data[i] = s >>> 24; }
  return { data, width: w, height: h };
}

/** Plain float bilinear with half-pixel centres and edge clamp: the definition the fast path approximates. */
function referenceResize(img: RgbImage, dw: number, dh: number): Float64Array {
  const out = new Float64Array(dw * dh * 3);
  const sx = img.width / dw, sy = img.height / dh;
  const clamp = (v: number, hi: number): number => Math.min(Math.max(v, 0), hi);
  for (let y = 0; y < dh; y++) {
    const fy = clamp((y + 0.5) * sy - 0.5, img.height - 1);
    const y0 = Math.floor(fy), y1 = Math.min(y0 + 1, img.height - 1), wy = fy - y0;
    for (let x = 0; x < dw; x++) {
      const fx = clamp((x + 0.5) * sx - 0.5, img.width - 1);
      const x0 = Math.floor(fx), x1 = Math.min(x0 + 1, img.width - 1), wx = fx - x0;
      for (let c = 0; c < 3; c++) {
        const p = (yy: number, xx: number): number => img.data[(yy * img.width + xx) * 3 + c]!;
        const top = p(y0, x0) * (1 - wx) + p(y0, x1) * wx;
        const bot = p(y1, x0) * (1 - wx) + p(y1, x1) * wx;
        out[(y * dw + x) * 3 + c] = top * (1 - wy) + bot * wy;
      }
    }
  }
  return out;
}

describe('letterbox geometry', () => {
  it('scales by the limiting side with truncation', () => {
    assert.deepEqual(letterboxGeometry(1280, 720, 640, 640), { ratio: 0.5, newWidth: 640, newHeight: 360 });
    assert.deepEqual(letterboxGeometry(720, 1280, 640, 640), { ratio: 0.5, newWidth: 360, newHeight: 640 });
    // 640/1000 = 0.64; 563 * 0.64 = 360.32 -> 360
    assert.deepEqual(letterboxGeometry(1000, 563, 640, 640), { ratio: 0.64, newWidth: 640, newHeight: 360 });
  });

  it('upscales small images', () => {
    assert.deepEqual(letterboxGeometry(100, 50, 640, 640), { ratio: 6.4, newWidth: 640, newHeight: 320 });
    const g = letterboxGeometry(33, 17, 640, 640);
    assert.equal(g.ratio, 640 / 33);
    assert.equal(g.newWidth, 640);
    assert.equal(g.newHeight, Math.trunc(17 * (640 / 33)));
  });

  it('handles a non-square [h, w] input and never returns a zero size', () => {
    // r = min(384/720, 640/1280) = 0.5
    assert.deepEqual(letterboxGeometry(1280, 720, 384, 640), { ratio: 0.5, newWidth: 640, newHeight: 360 });
    // r = min(320/480, 640/640) = 2/3
    const g = letterboxGeometry(640, 480, 320, 640);
    assert.equal(g.ratio, 320 / 480);
    assert.deepEqual([g.newWidth, g.newHeight], [Math.trunc(640 * (320 / 480)), 320]);
    assert.deepEqual(letterboxGeometry(10000, 2, 64, 64), { ratio: 0.0064, newWidth: 64, newHeight: 1 });
  });
});

describe('letterboxInto', () => {
  it('pads right and bottom with exactly 114/255 and writes CHW at an offset', () => {
    const img = randomImage(200, 100, 1);
    const [H, W] = [96, 160];
    const offset = 7;
    const out = new Float32Array(offset + 3 * H * W + 5).fill(-1);
    const info = letterboxInto(img, [H, W], out, offset);
    assert.deepEqual(info, { ratio: 0.8, newWidth: 160, newHeight: 80 });
    const pad = Math.fround(114 / 255);
    for (let c = 0; c < 3; c++) {
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          const v = out[offset + c * H * W + y * W + x]!;
          if (y >= 80) assert.equal(v, pad);
          else assert.ok(v >= 0 && v <= 1 && v !== -1);
        }
      }
    }
    for (let i = 0; i < offset; i++) assert.equal(out[i], -1);
    for (let i = offset + 3 * H * W; i < out.length; i++) assert.equal(out[i], -1);

    const tall = letterbox(randomImage(50, 100, 2), 64);
    assert.deepEqual([tall.newWidth, tall.newHeight], [32, 64]);
    assert.deepEqual(tall.dims, [1, 3, 64, 64]);
    for (let c = 0; c < 3; c++) for (let y = 0; y < 64; y++) for (let x = 32; x < 64; x++) {
      assert.equal(tall.tensor[c * 4096 + y * 64 + x], pad);
    }
  });

  it('keeps a constant-colour image exactly that colour', () => {
    const w = 123, h = 77;
    const data = new Uint8Array(w * h * 3);
    for (let i = 0; i < data.length; i += 3) { data[i] = 250; data[i + 1] = 3; data[i + 2] = 128; }
    for (const size of [64, 640, [200, 90] as [number, number]]) {
      const { tensor, newWidth, newHeight, dims } = letterbox({ data, width: w, height: h }, size);
      const [, , H, W] = dims;
      const expect = [250, 3, 128].map((v) => Math.fround(v / 255));
      for (let c = 0; c < 3; c++) for (let y = 0; y < newHeight; y++) for (let x = 0; x < newWidth; x++) {
        assert.equal(tensor[c * H * W + y * W + x], expect[c]);
      }
    }
  });

  it('rejects an output buffer that is too small', () => {
    assert.throws(() => letterboxInto(randomImage(4, 4, 3), 8, new Float32Array(3 * 64 - 1)), RangeError);
  });
});

describe('bilinear resize', () => {
  const cases: [number, number, number, number][] = [
    [1280, 720, 640, 360], [200, 120, 131, 79], [31, 17, 64, 35], [5, 3, 40, 24], [640, 480, 640, 480], [97, 211, 13, 29], [1, 1, 3, 3],
  ];
  for (const [sw, sh, dw, dh] of cases) {
    it(`${sw}x${sh} -> ${dw}x${dh} is within 1 LSB of float bilinear`, () => {
      const img = randomImage(sw, sh, sw * 31 + dh);
      const mine = resizeBilinear(img, dw, dh);
      const ref = referenceResize(img, dw, dh);
      let maxDiff = 0;
      for (let i = 0; i < ref.length; i++) maxDiff = Math.max(maxDiff, Math.abs(mine.data[i]! - ref[i]!));
      assert.ok(maxDiff <= 1, `max diff ${maxDiff}`);
    });
  }

  it('averages 2x2 blocks on an exact 2x downscale', () => {
    const img = randomImage(8, 6, 9);
    const out = resizeBilinear(img, 4, 3);
    for (let y = 0; y < 3; y++) for (let x = 0; x < 4; x++) for (let c = 0; c < 3; c++) {
      const p = (yy: number, xx: number): number => img.data[(yy * 8 + xx) * 3 + c]!;
      const sum = p(2 * y, 2 * x) + p(2 * y, 2 * x + 1) + p(2 * y + 1, 2 * x) + p(2 * y + 1, 2 * x + 1);
      assert.equal(out.data[(y * 4 + x) * 3 + c], (sum + 2) >> 2);
    }
  });

  it('letterbox takes the exact 2x path with the same values as the general resize', () => {
    const img = randomImage(256, 144, 21); // -> 128x72 on a 128 canvas
    const { tensor } = letterbox(img, 128);
    const ref = resizeBilinear(img, 128, 72);
    for (let y = 0; y < 72; y++) for (let x = 0; x < 128; x++) for (let c = 0; c < 3; c++) {
      assert.equal(tensor[c * 128 * 128 + y * 128 + x], Math.fround(ref.data[(y * 128 + x) * 3 + c]! / 255));
    }
    assert.equal(tensor[72 * 128], Math.fround(114 / 255));
  });
});
