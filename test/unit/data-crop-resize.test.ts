/**
 * RF-DETR's data steps (src/data/crop-resize.ts, the recipe steps pre_flip / crop_resize /
 * stretch_linear and RFDETR_AUGMENT): the flip first, the shortest-side resize and square crop with
 * its box clipping, the INTER_LINEAR final stretch that always drops boxes <= 1 px, and the recipe
 * resolved against RF-DETR's defaults.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_HYP, mulberry32, trainTransform } from '../../src/data/augment.ts';
import { maybeFlipFirst, randomResizeCrop } from '../../src/data/crop-resize.ts';
import { letterboxInto, resizeBilinear } from '../../src/data/letterbox.ts';
import { resolveRecipe } from '../../src/data/recipe.ts';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { RFDETR_AUGMENT, RFDETR_TRAIN_DEFAULTS } from '../../src/models/rfdetr/recipe.ts';
import { resolveTrainConfig } from '../../src/train/config.ts';

/** A w x h image whose pixel (x, y) is (x mod 256, y mod 256, 7). */
function ramp(w: number, h: number): RgbImage {
  const data = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) data.set([x % 256, y % 256, 7], (y * w + x) * 3);
  return { data, width: w, height: h };
}

const HYP = { prob: 1, scales: [400, 500, 600], maxSize: 600, minCrop: 384 };

describe('crop_resize', () => {
  it('shortest side to a drawn scale, then a square crop of [min(384, m), m], boxes shifted and clipped', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const img = ramp(320, 200);
      const boxes = Float32Array.of(3, 0, 0, 320, 200, 5, 10, 10, 12, 12);
      const out = randomResizeCrop({ img, boxes }, HYP, mulberry32(seed));
      const c = out.img.width;
      assert.equal(out.img.height, c);
      // Shortest side 200 -> s in {400, 500, 600}, long side 1.6 s; m = min(600, s).
      assert.ok(c >= 384 && c <= 600, `crop ${c}`);
      // The whole-image box becomes the whole crop.
      assert.deepEqual([...out.boxes.subarray(0, 5)], [3, 0, 0, c, c]);
      for (let i = 0; i < out.boxes.length; i += 5) assert.ok(out.boxes[i + 3]! > out.boxes[i + 1]! && out.boxes[i + 4]! > out.boxes[i + 2]!);
    }
  });

  it('the crop holds the image\'s pixels from its offset, and the boxes move by it', () => {
    for (let seed = 1; seed <= 10; seed++) {
      const out = randomResizeCrop({ img: ramp(400, 420), boxes: Float32Array.of(0, 100, 100, 300, 300) }, { ...HYP, scales: [400] }, mulberry32(seed));
      const c = out.img.width;
      const at = (x: number, y: number) => [...out.img.data.subarray((y * c + x) * 3, (y * c + x) * 3 + 3)];
      // Scale 400 leaves a 400 x 420 image as it is; the ramp's first pixel tells the offset.
      const [x0, y0] = at(0, 0) as [number, number];
      assert.deepEqual(at(c - 1, c - 1), [(x0 + c - 1) % 256, (y0 + c - 1) % 256, 7]);
      assert.deepEqual([...out.boxes], [0, 100 - x0, 100 - y0, Math.min(300 - x0, c), Math.min(300 - y0, c)]);
    }
  });

  it('draws nothing and changes nothing without boxes or at prob 0; boxes outside the crop are dropped', () => {
    const img = ramp(64, 48);
    const s = { img, boxes: new Float32Array(0) };
    assert.equal(randomResizeCrop(s, HYP, () => { throw new Error('drew'); }), s);
    const t = { img, boxes: Float32Array.of(1, 0, 0, 4, 4) };
    assert.equal(randomResizeCrop(t, { ...HYP, prob: 0 }, mulberry32(1)), t);
    // A 1000 x 1000 image at scale 400: crop side 384..400; a box in the far corner of the source is mostly outside.
    const big = randomResizeCrop({ img: ramp(1000, 1000), boxes: Float32Array.of(1, 0, 0, 1000, 1000, 2, 999, 999, 1000, 1000) }, { ...HYP, scales: [400] }, mulberry32(5));
    assert.ok(big.boxes.length === 5 || big.boxes.length === 10);
  });

  it('pre_flip flips image and boxes first, with no draw at prob 0', () => {
    const img = ramp(10, 2);
    const s = maybeFlipFirst({ img, boxes: Float32Array.of(0, 1, 0, 3, 2) }, 1, () => 0);
    assert.deepEqual([...s.boxes], [0, 7, 0, 9, 2]);
    assert.equal(s.img.data[0], 9);
    maybeFlipFirst(s, 0, () => { throw new Error('drew'); });
  });
});

describe('stretch_linear', () => {
  it('stretches with INTER_LINEAR (no antialias) and drops boxes <= 1 px even when all would go', () => {
    const img = ramp(200, 100);
    const out = new Float32Array(3 * 32 * 32), targets = new Float32Array(2 * 5);
    const hyp = { ...DEFAULT_HYP, hsvProb: 0, flipProb: 0, resize: 'stretch' as const, stretchLinear: true };
    // 200 -> 32 is x0.16: a 5 px wide box becomes 0.8 px.
    const n = trainTransform(img, Float32Array.of(1, 10, 10, 15, 90), 32, hyp, mulberry32(1), out, 0, targets, 0, 2);
    assert.equal(n, 0);
    const want = new Float32Array(3 * 32 * 32);
    letterboxInto(resizeBilinear(img, 32, 32), 32, want, 0);
    assert.deepEqual(out, want);
    // Without stretchLinear the antialiased stretch gives other pixels, and the lone box is kept (the YOLO rule).
    const other = new Float32Array(3 * 32 * 32);
    assert.equal(trainTransform(ramp(200, 100), Float32Array.of(1, 10, 10, 15, 90), 32, { ...hyp, stretchLinear: false }, mulberry32(1), other, 0, targets, 0, 2), 1);
    assert.notDeepEqual(other, want);
  });
});

describe('RFDETR_AUGMENT', () => {
  it('resolves against RF-DETR\'s defaults: flip 0.5 first, crop 0.5 with 400/500/600, max 600, min 384, the linear stretch; no mosaic, HSV or mixup', () => {
    const cfg = resolveTrainConfig({ data: 'x.yaml', multi_scale: false }, () => undefined, RFDETR_TRAIN_DEFAULTS) as unknown as Record<string, unknown>;
    const { hyp, epoch } = resolveRecipe(RFDETR_AUGMENT, (k) => cfg[k]);
    assert.deepEqual({ pre: hyp.preFlipProb, crop: hyp.cropResize, linear: hyp.stretchLinear, flip: hyp.flipProb, hsv: hyp.hsvProb, mosaic: hyp.mosaicProb, mixup: hyp.mixupProb, affine: hyp.affine },
      { pre: 0.5, crop: { prob: 0.5, scales: [400, 500, 600], maxSize: 600, minCrop: 384 }, linear: true, flip: 0, hsv: 0, mosaic: 0, mixup: 0, affine: null });
    assert.deepEqual(epoch(0, 100), { mosaic: false, strong: false });
    const cfg2 = resolveTrainConfig({ data: 'x.yaml', multi_scale: false, crop_resize_prob: 0.2, flip_prob: 0 }, () => undefined, RFDETR_TRAIN_DEFAULTS) as unknown as Record<string, unknown>;
    const h2 = resolveRecipe(RFDETR_AUGMENT, (k) => cfg2[k]).hyp;
    assert.deepEqual([h2.preFlipProb, h2.cropResize!.prob], [0, 0.2]);
  });

  it('a crop_resize with bad sizes is a recipe error', () => {
    assert.throws(() => resolveRecipe([{ step: 'crop_resize', prob: 1, scales: [], maxSize: 600, minCrop: 384 }], () => undefined), /positive integer scales/);
  });
});
