import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { letterbox } from '../../src/data/letterbox.ts';
import { resizePilBilinear } from '../../src/data/pil-resize.ts';
import {
  DEFAULT_HYP, augmentHsv, drawHsvGains, filterBoxes, flipHorizontal, hsv8ToRgb, mosaic4, mulberry32, rgbToHsv8,
  scaleTranslate, trainTransform,
} from '../../src/data/augment.ts';

function solid(w: number, h: number, rgb: [number, number, number]): RgbImage {
  const data = new Uint8Array(w * h * 3);
  for (let i = 0; i < data.length; i += 3) data.set(rgb, i);
  return { data, width: w, height: h };
}


// augmentHsv on a 16x16 LCG image (seed 12345; rows narrower than a vector block: scalar path), as cv2 4.6
// computes it (BGR2HSV, int16 gains, HSV2BGR).
const CV2_GOLDEN: [[number, number, number], string][] = [
  [[3, 20, -25], 'CwByec8JX21/rwCS3gCFZ0ncS8vlkFFdM0yTKgXBRwBdMWvdAK5ROduEkZB8FNTBVKA8oHOpWyJXmWbGSdOzE5ZQQqeyIxFOxqdqKD3FvEW0nWjMetJHnLoHeYUNZ8oFMK6uRxwvyEmioweZvoohzl4eiqzmAI8TTg5pwOM0PMvVHKCOZD7hrJVXXmREQNhZDXySS8AREn2BilpXgkOJETYhewAI0SjLCjt0AB0WrD8APH5QiKANCoIeSwgsrC5gOUeipQ995AMSR7nVT35TMSGdk8E2XEjeEF3joDg0oUm8ZryRo5LZWLwAqgDEDmt5yBlxlc0RHHdoPYBwmIQzM7sYoBNeRUMHJhrZQi3LqMQ2FcaX1A0HE0trMpVJv11SUARcQEEgn8EZaT6bGcq4ALsZWXkhrVe2T3K3dtchYwJ70zDlWAJHmjK6IFjartVqyE9XV8K7jIdddIHBAG9zAJVPk19FAKw0bbKSAK8v0wDalCqYViOvXi8A4ADCV9CE3gkengBUywBzXlC7rB3IoJcfK0RqM0Aaj9mEANJbsyqlANh6cgAinJEx5VRjzXgKcIghKE91Mkiy2yuJ1kAvAHa7luRqfZ2DUE91lwUA3hBbaACIbprltLQLBQu+LVlJ5C3SJL5nmwI1WeRmjS2HEi8dxHKI4DeiWgAJszbZNdNvIgenf74AHTNnx7iQn6KvqF8Ajc1jbKxMtgB/wqG4zr4soa5ecOAAwBRZ1UqGgh3QfQA2fthd5KgDImGy1eKvlFfDIxuLJYUCbMUTisAMw7tQhT6aESp+uwCc2TBSfYXRcmNS2TUDo4lLgNpZxnyBc1iSPRMYgooTLFuiRwR7oHJKz6gptAwGk7cy1U8MBcNYNkluRlaNAD3jy7iNKIWcVcaRk9oXPVktYLPAmahvEV+ADagnf8p3w9ASKwYpep2q1TjmIEBSHHmMDYEAkABgQuFSZXOHXgGTHhsyyjEKLocuzXJcmDSnm+KFJTNsO1lLBrTXAG1+ABl/gS5aqbsz'],
  [[-4, -29, 29], 'GCuo2P88qrG12Cbl/zDchor/hP/3xpWqbJrJNTz3VxKTar7/HuRMc/+Ux8fHSf/CpdZ608LfhlGRybP8if/IQcxhgujaOzWE/NW4Y5v74IjyyrP/z/+H8OQ3u6k2yv83auTIfUps/o32vTPZ9JxZ/21Wyur/KMUWZTOf//pref/pT9akd3f/4sCempmHhf98OMi+qfZEPLeewJ2jq4K/N2xBsRRD4GL/L4WqC1Mx4jcdebR91sw7OrgxgSds4mi1dprY2z7W/zRxhv/7l7STVGHT6vd1hJD/Q7T/1m+Dw4zysvLD3d3/svIcrir6Nq+j/lHQ8/9GS62GeraazqRsj/FN1kO0e2QkT2z/ann/+vZ1S/yk/zlhPJSha8tr9ZikaSKSd29R9/FPkHzRUP/FQfEtoq9R0p7slMbtzf9YdCWxzGf/ih6Os27wV7H/9P+w/pW1n/jdwrmnxNj3G6mNIctUyYuEG+Iou+jIK+Uxxin/sWHObFrllDYU6ir/nP+p/zt81Bio/yHTlZ7xu1b+1q5SX4igcXZG3//MIf9N12TpJ/9vqBpm0q9q/4+0/349vr5TXJarbp/o/2Pb/2l9K9fx3P+n0dPRlJmrzSFD/0O0dCC+rN7/6sE8Nmj0ZI916mP/XfR70SuJov+Us2PDOmVA+sHe/3DskBlBvXH/cf+END/d3/QjSnad/fLn5eXl3l0d4f+svuKQ7CPf+Pj4/81o5OCnxv8p9km3/4nYjVT/sxZ/z/+f/5o0Wbjo///3vZ/5S1/Bcbsmy/tJ6vY/+duVqXzQO3O04yHx/2mqydv/qJ6a/zU12bGOz/+Z/M/cqJ7IcztNwKtAZa7YVSix1p2M/7dk6jVZ6e1u/1I/N/lecI2khqLDIZD///DiX9LOnPy55/9Mfo9jq/bu3d6+O662R9482v/H/+BHViBhzN/gz2//T4CITMK6TLcXxhe0jf98sbm9aSjJTVFo/z5Eeb1l/6OmtXDd4f/HVneieo+AOP/yGrSlGl21t2Sk8eRw'],
  [[0, 0, 0], 'BASLpOgcfoyYyAq79xKyc2X1Z/T+qWx+SW2sKhbaTwF2SpX2A8dLUvSOqqifKe3GdrlUtZPCcjR0rIXfZOy/JK9XW8vLLR5n37qJP2Te0V/VsIfloutix9MYnp4ckeMXRse6YC5J4WTIthe815E252M0rdP/AKgGWRuC6/xNVu7pL7mZblj6xadzen1fWvFkHaKrctkkIZqSo3N1lFyiH08vlAAZ3z/qF1qNATYkxTcDVJdhr7keGJsgZBNGxUSEUWm7viCk/Rc9YuDuapdqODS2udpPaWT3Jor8uUtSr2PVhdWlvrbyedUBrAzdHI6S4S6Zv+YlLpB2VZmCsZJJWdQsuSWDXlQRLzbySkXkz91OKd+c7RooImqESK5W2G1tXQ51WlczydoteVa0LeO/ENQWeZIzvXPPapbQoPA4bA6U2kr+cQtnpUnTN4Lz0+6J4Wt+c9vKpZ17lKfaBoyDCa5QrHBeAcUojMunD8gu1Avzoj+xXjjIdzED+Q3xdOmT9x1JtwB05ASZb2vUsjLhuaMyP2GDTlkruPKmBOtRzEDMCfF2iwY7tZ9H/nKO5nsdkqE0PG2OSWzL9EOz70dHDp/Uv/2Jn7aha22OsAgT9yWHbgmhjsP+zbsdFzDXQ3Jc/UX9OddutBBXdv12o0KmIUgr3ZKt+VHMcwcdvFDyTux4IxfAptcHLk+A4NCzxcbIwVwDs+aBkMVnzwen28bX58ZEwsd7mvkM2SiA7mWuiDLplgJRpvF7/akXN4bL9fvXpHTcLTGkQ54Old4ntNkf3MlrlFazIEiX1AXG8kh7nq3qi3tv8jQXvJlmqPN2352oiHSrViIso58kQn67ThCUuYNk6LBBzRcjudBJ7lAgF9xZTWaHX3emBF/85M+wPam1cd+hvvMtWHJCftbZucGPIIGZHsEppuOX6eMmQg9Em7zD3FL/MlxrLp2lIJoCqQCCXfpdhJOgYw+sLy9L4zEdTKBD5oR5pUvAw/unOE+FVHJhGeLwBZKXBTGYmkN6z9RL'],
];

const px = (img: RgbImage, x: number, y: number): number[] => Array.from(img.data.subarray((y * img.width + x) * 3, (y * img.width + x) * 3 + 3));

// Expected values were produced by cv2 4.6 (cvtColor BGR2HSV / HSV2BGR on uint8, the original's calls).
describe('HSV jitter (OpenCV 8-bit HSV)', () => {
  it('converts as OpenCV: H in 0..179, S and V in 0..255', () => {
    assert.deepEqual(rgbToHsv8(255, 0, 0), [0, 255, 255]);
    assert.deepEqual(rgbToHsv8(0, 255, 0), [60, 255, 255]);
    assert.deepEqual(rgbToHsv8(0, 0, 255), [120, 255, 255]);
    assert.deepEqual(rgbToHsv8(128, 128, 128), [0, 0, 128]);
    // (200,100,50): H = round-trip of 20 deg / 2 = 10; S = 150/200*255 = 191.25 -> 191
    assert.deepEqual(rgbToHsv8(200, 100, 50), [10, 191, 200]);
    assert.deepEqual(hsv8ToRgb(0, 255, 255), [255, 0, 0]);
    assert.deepEqual(hsv8ToRgb(90, 255, 255), [0, 254, 255]); // cv2 truncates 254.99998
    assert.deepEqual(hsv8ToRgb(10, 0, 77), [77, 77, 77]);
  });

  it('adds gains with hue wrap-around and S/V saturation', () => {
    // 34 px wide: OpenCV's vector path converts pixels 0..31, its scalar path (which rounds) the rest
    const img = solid(34, 2, [200, 100, 50]); // H 10, S 191, V 200
    augmentHsv(img, [10, -20, 30]); // -> H 20 (40 deg), S 171, V 230
    // v = 230, p = 230*(1-171/255) = 75.76, t = 230*(1 - 171/255*(1 - 2/3)) = 178.59
    assert.deepEqual(px(img, 31, 1), [230, 178, 75], 'vector path truncates');
    assert.deepEqual(px(img, 32, 1), [230, 179, 76], 'scalar path rounds');
    const wrap = solid(32, 1, [200, 100, 50]);
    augmentHsv(wrap, [-15, 0, 0]); // H -5 -> 175 (350 deg): v=200, p=50, q = 200*(1 - 0.749*(5/6))=75.2
    assert.deepEqual(px(wrap, 0, 0), [200, 50, 75]);
    const sat = solid(32, 1, [250, 250, 10]);
    augmentHsv(sat, [0, 30, 30]); // S 245 -> 255, V 250 -> 255: pure yellow
    assert.deepEqual(px(sat, 0, 0), [255, 255, 0]);
  });

  it('matches cv2 bit for bit on a random image', () => {
    let seed = 12345;
    const src = Uint8Array.from({ length: 16 * 16 * 3 }, () => { seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; return seed >>> 24; });
    for (const [gains, want] of CV2_GOLDEN) {
      const img = { data: src.slice(), width: 16, height: 16 };
      augmentHsv(img, gains);
      assert.deepEqual(Buffer.from(img.data).toString('base64'), want, `gains ${gains}`);
    }
  });

  it('draws integer gains within the limits, some zeroed', () => {
    const rand = mulberry32(5);
    let zeros = 0;
    for (let i = 0; i < 300; i++) {
      const g = drawHsvGains(rand);
      g.forEach((v, k) => { assert.ok(Number.isInteger(v) && Math.abs(v) < DEFAULT_HYP.hsvGains[k]!); if (v === 0) zeros++; });
    }
    assert.ok(zeros > 400 && zeros < 560, `zeros ${zeros}`); // ~ half of 900, plus truncation of |g| < 1
  });
});

describe('geometry', () => {
  it('flips image and boxes', () => {
    const img: RgbImage = { data: Uint8Array.from({ length: 4 * 2 * 3 }, (_, i) => i), width: 4, height: 2 };
    const orig = img.data.slice();
    const boxes = Float32Array.of(2, 0, 0, 1, 2, 5, 1, 0, 3, 1);
    flipHorizontal(img, boxes);
    assert.deepEqual(px(img, 0, 0), Array.from(orig.subarray(9, 12)));
    assert.deepEqual(Array.from(boxes), [2, 3, 0, 4, 2, 5, 1, 0, 3, 1]);
    flipHorizontal(img, boxes);
    assert.deepEqual(img.data, orig);
    assert.deepEqual(Array.from(boxes), [2, 0, 0, 1, 2, 5, 1, 0, 3, 1]);
  });

  it('filters boxes whose side is too small', () => {
    const b = Float32Array.of(0, 0, 0, 10, 1.5, 1, 0, 0, 10, 10);
    assert.deepEqual(Array.from(filterBoxes(b, 1)), [0, 0, 0, 10, 1.5, 1, 0, 0, 10, 10]);
    assert.deepEqual(Array.from(filterBoxes(b, 2)), [1, 0, 0, 10, 10]);
    assert.deepEqual(Array.from(filterBoxes(b, 1, 0.5)), [1, 0, 0, 10, 10]);
  });

  it('mosaic places four images around a random centre with their boxes', () => {
    const colours: [number, number, number][] = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0]];
    for (let seed = 0; seed < 20; seed++) {
      const items = colours.map((c, k) => {
        const img = solid(64, 64, [114, 114, 114]);
        // a 24x20 coloured object at (20, 30)
        for (let y = 30; y < 50; y++) for (let x = 20; x < 44; x++) img.data.set(c, (y * 64 + x) * 3);
        return { img, boxes: Float32Array.of(k, 20, 30, 44, 50) };
      });
      const { img, boxes } = mosaic4(items, 64, mulberry32(seed));
      assert.equal(img.width, 64);
      assert.equal(img.height, 64);
      for (let i = 0; i < boxes.length; i += 5) {
        const [cls, x1, y1, x2, y2] = Array.from(boxes.subarray(i, i + 5)) as [number, number, number, number, number];
        assert.ok(x1 >= 0 && y1 >= 0 && x2 <= 64 && y2 <= 64 && x2 - x1 > 2 && y2 - y1 > 2);
        // inside the box (1 px margin for the 2x downscale), the object's colour
        for (let y = Math.ceil(y1) + 1; y < Math.floor(y2) - 1; y++) {
          for (let x = Math.ceil(x1) + 1; x < Math.floor(x2) - 1; x++) assert.deepEqual(px(img, x, y), colours[cls], `seed ${seed} box ${cls} at ${x},${y}`);
        }
      }
    }
  });

  it('scale/translate moves boxes with the pixels', () => {
    const img = solid(40, 40, [0, 0, 0]);
    for (let y = 10; y < 20; y++) for (let x = 10; x < 20; x++) img.data.set([255, 255, 255], (y * 40 + x) * 3);
    const r = scaleTranslate(img, Float32Array.of(0, 10, 10, 20, 20), 2, 4, -2);
    // centre 20: x' = (x - 20)*2 + 20 + 4 -> 4..24; y' = (y-20)*2 + 20 - 2 -> 0..18 (clipped)
    assert.deepEqual(Array.from(r.boxes), [0, 4, 0, 24, 18]);
    assert.deepEqual(px(r.img, 14, 9), [255, 255, 255]);
    assert.deepEqual(px(r.img, 30, 30), [0, 0, 0]);
  });
});

describe('train transform', () => {
  it('an image without boxes is only letterboxed; targets are all padding', () => {
    const img = solid(50, 30, [10, 200, 30]);
    const plain = letterbox(img, 64).tensor;
    const out = new Float32Array(3 * 64 * 64), targets = new Float32Array(4 * 5).fill(7);
    const n = trainTransform(img, new Float32Array(0), 64, { ...DEFAULT_HYP, flipProb: 1 }, mulberry32(1), out, 0, targets, 0, 4);
    assert.equal(n, 0);
    assert.deepEqual(out, plain);
    assert.deepEqual(Array.from(targets), [-1, 0, 0, 0, 0, -1, 0, 0, 0, 0, -1, 0, 0, 0, 0, -1, 0, 0, 0, 0]);
  });

  it('flips, normalises by the canvas, clips and pads targets; tiny boxes are dropped', () => {
    const img = solid(64, 32, [10, 200, 30]);
    const out = new Float32Array(3 * 64 * 64), targets = new Float32Array(3 * 5);
    const boxes = Float32Array.of(1, 8, 4, 24, 20, 2, 30, 10, 30.5, 20);
    const n = trainTransform(img, boxes, 64, { ...DEFAULT_HYP, hsvProb: 0, flipProb: 1 }, mulberry32(1), out, 0, targets, 0, 3);
    assert.equal(n, 1);
    const t = Array.from(targets);
    assert.deepEqual(t.slice(5), [-1, 0, 0, 0, 0, -1, 0, 0, 0, 0]);
    // flipped: x1' = 64 - 24 = 40, x2' = 56
    assert.deepEqual(t.slice(0, 5), [1, 40 / 64, 4 / 64, 56 / 64, 20 / 64]);
    // bottom padding is 114/255
    assert.equal(out[63 * 64], Math.fround(114 / 255));
  });

  it('resize stretch (D-FINE\'s train Resize to s x s): the image stretched by the antialiased bilinear (Pillow\'s kernel), x and y normalised by their own sides, no padding', () => {
    // A 64 x 32 pre-resized image: left half dark, right half bright.
    const img = solid(64, 32, [10, 200, 30]);
    for (let y = 0; y < 32; y++) for (let x = 32; x < 64; x++) img.data.set([240, 20, 90], (y * 64 + x) * 3);
    const out = new Float32Array(3 * 64 * 64), targets = new Float32Array(2 * 5);
    const boxes = Float32Array.of(1, 8, 4, 24, 20);
    const n = trainTransform(img, boxes, 64, { ...DEFAULT_HYP, hsvProb: 0, flipProb: 0, resize: 'stretch' }, mulberry32(1), out, 0, targets, 0, 2);
    assert.equal(n, 1);
    // y spans 32 rows stretched to 64: 4 / 32 and 20 / 32; x as is.
    assert.deepEqual(Array.from(targets.subarray(0, 5)), [1, 8 / 64, 4 / 32, 24 / 64, 20 / 32]);
    const want = resizePilBilinear(img, 64, 64);
    for (let k = 0; k < 64 * 64; k++) for (let c = 0; c < 3; c++) {
      assert.equal(out[c * 64 * 64 + k], Math.fround(want.data[k * 3 + c]! / 255), `pixel ${k} channel ${c}`);
    }
    // The bottom row is image, not the letterbox's 114 padding.
    assert.equal(out[63 * 64], Math.fround(10 / 255));
    // A box 0.8 px tall before the stretch is 1.6 px after: kept (the filter sees the stretched side; a letterbox drops it).
    const kept = trainTransform(img, Float32Array.of(0, 8, 4, 24, 4.8), 64, { ...DEFAULT_HYP, hsvProb: 0, flipProb: 0, resize: 'stretch' }, mulberry32(1), out, 0, targets, 0, 2);
    assert.equal(kept, 1);
  });

  it('keeps every box and skips HSV/flip when all boxes would be filtered', () => {
    const img = solid(64, 64, [10, 200, 30]);
    const out = new Float32Array(3 * 64 * 64), targets = new Float32Array(2 * 5);
    const n = trainTransform(img, Float32Array.of(0, 5, 5, 5.5, 9), 64, { ...DEFAULT_HYP, flipProb: 1, hsvGains: [100, 100, 100] }, mulberry32(1), out, 0, targets, 0, 2);
    assert.equal(n, 1);
    assert.deepEqual(Array.from(targets.subarray(0, 5)), [0, 5 / 64, 5 / 64, 5.5 / 64, 9 / 64]);
    assert.equal(out[0], Math.fround(10 / 255));
  });
});
