/**
 * YOLOX's mosaic random affine and mixup (src/data/affine.ts, mixup.ts) on real photos: a marker
 * rectangle of a colour the photos do not have is painted in, and after the transform the boxes must
 * bound the marker's pixels where it went (boxes moved with the image), be clipped to the canvas,
 * and boxes shrunk below 1 px are dropped by the train transform as the original does.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { affineBoxes, drawAffine, randomAffine, warpAffine, type AffineHyp } from '../../src/data/affine.ts';
import { DEFAULT_HYP, mosaicAffine, mulberry32, preResize, trainTransform } from '../../src/data/augment.ts';
import { loadImageFile } from '../../src/data/image.ts';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { createLoader } from '../../src/data/loader.ts';
import { drawMixup, mixup } from '../../src/data/mixup.ts';
import { REPO_ROOT } from '../helpers/fixtures.ts';

const S = 160;
const MARK: [number, number, number] = [255, 0, 255];
const YOLOX_AFFINE: AffineHyp = { degrees: 10, translate: 0.1, scale: [0.1, 2.0], shear: 2 };

let photo: RgbImage;
let parkour: RgbImage;

before(async () => {
  photo = preResize(await loadImageFile(join(REPO_ROOT, 'assets', 'sample.jpg')), S);
  parkour = preResize(await loadImageFile(join(REPO_ROOT, 'test', 'assets', 'parkour.jpg')), S);
});

function withMarker(img: RgbImage, [x1, y1, x2, y2]: [number, number, number, number], colour = MARK): RgbImage {
  const out = { ...img, data: img.data.slice() };
  for (let y = y1; y < y2; y++) for (let x = x1; x < x2; x++) out.data.set(colour, (y * img.width + x) * 3);
  return out;
}

/** Bound of the pixels within `tol` of `colour` (per channel), or null. */
function colourBound(img: RgbImage, colour: readonly number[], tol: number): [number, number, number, number] | null {
  let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      const o = (y * img.width + x) * 3;
      if (Math.abs(img.data[o]! - colour[0]!) <= tol && Math.abs(img.data[o + 1]! - colour[1]!) <= tol && Math.abs(img.data[o + 2]! - colour[2]!) <= tol) {
        x1 = Math.min(x1, x); y1 = Math.min(y1, y); x2 = Math.max(x2, x + 1); y2 = Math.max(y2, y + 1);
      }
    }
  }
  return x1 === Infinity ? null : [x1, y1, x2, y2];
}

function assertNear(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what: string): void {
  for (let k = 0; k < want.length; k++) assert.ok(Math.abs(got[k]! - want[k]!) <= tol, `${what}: [${Array.from(got).map((v) => v.toFixed(1))}] vs [${Array.from(want).map((v) => v.toFixed(1))}]`);
}

describe('random affine (YOLOX mosaic)', () => {
  it('draws the matrix as cv2.getRotationMatrix2D about the origin plus shear and translation', () => {
    // rand() = 1: angle = +degrees, scale = max, shear x = shear y = tan(+shear), translation +translate * side
    const m = drawAffine(() => 1, 200, 100, { degrees: 30, translate: 0.1, scale: [0.5, 2], shear: 45 });
    const a = 2 * Math.cos(Math.PI / 6), b = 2 * Math.sin(Math.PI / 6);
    const want = [a - b, b + a, 20, -b + a, a + b, 10]; // tan(45 deg) = 1
    assertNear(m, want, 1e-9, 'matrix');
    assert.deepEqual(drawAffine(() => 0.5, 64, 64, { degrees: 10, translate: 0.1, scale: [1.5, 1.5], shear: 2 }), [1.5, 0, 0, 0, 1.5, 0]);
    assert.throws(() => drawAffine(() => 0, 64, 64, { ...YOLOX_AFFINE, scale: [0, 1] }), /mosaic_scale must be a range of positive scales/);
  });

  it('moves the boxes with the pixels of a real photo (rotation, shear, scale, translation)', () => {
    const box: [number, number, number, number] = [50, 40, 90, 70];
    const img = withMarker(photo, box);
    let checked = 0;
    for (let seed = 0; seed < 12; seed++) {
      const m = drawAffine(mulberry32(seed), S, S, { degrees: 10, translate: 0.1, scale: [0.6, 1.6], shear: 2 });
      const warped = warpAffine(img, m, S, S);
      const [, ...got] = affineBoxes(Float32Array.of(0, ...box), m, S, S);
      const bound = colourBound(warped, MARK, 40);
      const inside = got[0]! > 0 && got[1]! > 0 && got[2]! < S && got[3]! < S;
      if (!inside) continue; // clipped boxes: tested below
      assert.ok(bound, `seed ${seed}: the marker is in the warped image`);
      // the warped rectangle's corners are the box's corners (bilinear blur: 1.5 px)
      assertNear(bound, got, 1.5, `seed ${seed} marker bound vs box`);
      checked++;
    }
    assert.ok(checked >= 8, `${checked} unclipped draws checked`);
  });

  it('clips boxes to the canvas and leaves 114 outside the warped image', () => {
    // scale 2 about the origin and +16 px: the photo's right/bottom half falls off the canvas
    const m: [number, number, number, number, number, number] = [2, 0, 16, 0, 2, 16];
    const img = withMarker(photo, [60, 50, 120, 85]); // the photo is 160 x 90
    const warped = warpAffine(img, m, S, S);
    const boxes = affineBoxes(Float32Array.of(3, 60, 50, 120, 85, 1, 0, 0, 4, 4), m, S, S);
    assert.deepEqual(Array.from(boxes), [3, 136, 116, 160, 160, 1, 16, 16, 24, 24]);
    assert.deepEqual(colourBound(warped, MARK, 40), [136, 116, 160, 160]);
    assert.deepEqual(Array.from(warped.data.subarray(0, 3)), [114, 114, 114], 'above/left of the image: border 114');
    assert.deepEqual(Array.from(warped.data.subarray((20 * S + 20) * 3, (20 * S + 20) * 3 + 3)), Array.from(photo.data.subarray((2 * S + 2) * 3, (2 * S + 2) * 3 + 3)), 'pixel (20,20) is the photo at (2,2)');
  });

  it('the train transform drops boxes the affine shrank below 1 px, keeps the rest', () => {
    // scale 0.1: a 6 px box becomes 0.6 px, a 60 px one 6 px
    const { img, boxes } = randomAffine({ img: photo, boxes: Float32Array.of(0, 10, 10, 16, 16, 1, 20, 20, 80, 80) }, S, { degrees: 0, translate: 0, scale: [0.1, 0.1], shear: 0 }, mulberry32(1));
    assertNear(boxes, [0, 1, 1, 1.6, 1.6, 1, 2, 2, 8, 8], 1e-5, 'scaled boxes');
    const out = new Float32Array(3 * S * S), targets = new Float32Array(4 * 5);
    const n = trainTransform(img, boxes, S, { ...DEFAULT_HYP, hsvProb: 0, flipProb: 0 }, mulberry32(2), out, 0, targets, 0, 4);
    assert.equal(n, 1);
    assertNear(targets.subarray(0, 5), [1, 2 / S, 2 / S, 8 / S, 8 / S], 1e-6, 'kept box');
  });

  it('the mosaic canvas goes through the affine onto s x s with its boxes', () => {
    const colours: [number, number, number][] = [[255, 0, 255], [0, 255, 255], [255, 255, 0], [0, 0, 255]];
    let checked = 0;
    for (let seed = 0; seed < 10; seed++) {
      const items = colours.map((c, k) => ({ img: withMarker(k % 2 ? parkour : photo, [40, 50, 100, 90], c), boxes: Float32Array.of(k, 40, 50, 100, 90) }));
      const { img, boxes } = mosaicAffine(items, S, { degrees: 5, translate: 0.1, scale: [0.5, 1.0], shear: 2 }, mulberry32(seed));
      assert.equal(img.width, S);
      assert.equal(img.height, S);
      for (let i = 0; i < boxes.length; i += 5) {
        const b = Array.from(boxes.subarray(i + 1, i + 5));
        assert.ok(b.every((v) => v >= 0 && v <= S), `clipped: ${b}`);
        if (b[0]! <= 0 || b[1]! <= 0 || b[2]! >= S || b[3]! >= S || b[2]! - b[0]! < 4 || b[3]! - b[1]! < 4) continue;
        // unclipped on the output, and whole on the mosaic canvas when its marker bound matches
        const bound = colourBound(img, colours[boxes[i]!]!, 40);
        if (!bound) continue;
        if (Math.abs(bound[2] - bound[0] - (b[2]! - b[0]!)) > 3) continue; // cut by the mosaic's tile edge
        assertNear(bound, b, 2, `seed ${seed} class ${boxes[i]}`);
        checked++;
      }
    }
    assert.ok(checked >= 6, `${checked} boxes checked`);
  });
});

describe('mixup', () => {
  it('blends 0.5 a + 0.5 b (truncated) and adds the other image\'s boxes, scaled, flipped, shifted and clipped', () => {
    const base = { img: withMarker(photo, [10, 10, 30, 30], [0, 255, 0]), boxes: Float32Array.of(0, 10, 10, 30, 30) };
    const other = { img: withMarker(parkour, [20, 30, 60, 70]), boxes: Float32Array.of(2, 20, 30, 60, 70) };
    // jitter 1: no rescale; flipped; the padded canvas is s x s, so no offset is drawn
    let draws = 0;
    const r = mixup(base, other, S, { jitter: 1, flip: true }, () => { draws++; return 0.5; });
    assert.equal(draws, 0);
    assert.deepEqual(Array.from(r.boxes), [0, 10, 10, 30, 30, 2, S - 60, 30, S - 20, 70]);
    // the other image letterboxed top-left (its height < S: 114 below), flipped
    const ox = S - 1 - 35, o = (50 * S + ox) * 3;
    for (let c = 0; c < 3; c++) assert.equal(r.img.data[o + c], Math.trunc(0.5 * base.img.data[o + c]! + 0.5 * MARK[c]!));
    // the magenta marker's half shows where its box says
    const half = MARK.map((v) => v / 2);
    const bound = colourBound({ ...r.img, data: r.img.data.map((v, k) => Math.max(0, v - Math.trunc(base.img.data[k]! / 2))) }, half, 2);
    assert.deepEqual(bound, [S - 60, 30, S - 20, 70]);
  });

  it('jitters the other image and crops it at a random offset', () => {
    const base = { img: photo, boxes: Float32Array.of(0, 10, 10, 30, 30) };
    const other = { img: withMarker(parkour, [100, 20, 150, 60]), boxes: Float32Array.of(1, 100, 20, 150, 60) };
    const rand = mulberry32(3);
    const draw = drawMixup(rand, [1.5, 1.5]);
    assert.equal(draw.jitter, 1.5);
    const r = mixup(base, other, S, { ...draw, flip: false }, rand);
    const [, x1, y1, x2, y2] = Array.from(r.boxes.subarray(5));
    // 1.5 x: 150..225 wide before the crop (240 px canvas): clipped on the right
    assert.equal(x2, S);
    assert.ok(x1! > 0 && x1! < 150 && y1! >= 0 && y2! - y1! > 30);
    const bound = colourBound({ ...r.img, data: r.img.data.map((v, k) => Math.max(0, v - Math.trunc(photo.data[k]! / 2))) }, MARK.map((v) => v / 2), 2);
    assertNear(bound!, [x1!, y1!, x2!, y2!], 1.5, 'marker vs box');
  });

  it('runs in the loader after the mosaic; YOLO9\'s pipeline (no affine, no mixup) is unchanged by default', async () => {
    const split = {
      images: [join(REPO_ROOT, 'assets', 'sample.jpg'), join(REPO_ROOT, 'test', 'assets', 'parkour.jpg')],
      labels: [{ rows: Float32Array.of(0, 0.5, 0.5, 0.4, 0.4), n: 1 }, { rows: Float32Array.of(1, 0.3, 0.6, 0.2, 0.5), n: 1 }],
    };
    const run = async (hyp: Record<string, unknown>): Promise<{ counts: number[]; images: Float32Array }> => {
      const loader = createLoader(split, { imgsz: 96, batch: 2, workers: 0, seed: 5, hyp });
      try {
        for await (const b of loader.epoch(0)) return { counts: b.counts, images: b.images.data as Float32Array };
      } finally {
        await loader.close();
      }
      throw new Error('no batch');
    };
    const plain = await run({});
    assert.deepEqual(await run({ affine: null, mixupProb: 0 }), plain, 'the defaults are the YOLO9 pipeline');
    // scale 0.5 shows the whole 2s canvas: the mosaic's 4 boxes, plus 1 from mixup
    const affine = { degrees: 0, translate: 0, scale: [0.5, 0.5], shear: 0 };
    const warped = await run({ affine });
    assert.deepEqual(warped.counts, [4, 4]);
    assert.notDeepEqual(warped.images, plain.images, 'the affine replaces the halving');
    assert.deepEqual((await run({ affine, mixupProb: 1 })).counts, [5, 5], 'mixup adds the other image\'s box');
  });
});
