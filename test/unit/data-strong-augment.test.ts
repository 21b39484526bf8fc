/**
 * D-FINE's strong train ops (src/data/strong-augment.ts, dfine.md 6.2) held to torchvision v2's
 * definitions: the zoom-out's canvas, placement and fill; the IoU crop's scale / aspect limits, its
 * centre rule and clipping; the photometric distort's odds (each of five ops at p 0.5) and its grey
 * invariance; the sanitize; the loader switch; and the epochs they run in (stop epoch 112 of 132,
 * never in the no-aug epochs).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { mulberry32 } from '../../src/data/augment.ts';
import { loadDataset } from '../../src/data/dataset.ts';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { loadImageFile } from '../../src/data/image.ts';
import { createLoader } from '../../src/data/loader.ts';
import { resizePilBilinear } from '../../src/data/pil-resize.ts';
import { iouCrop, photometricDistort, sanitizeBoxes, strongAugment, zoomOut } from '../../src/data/strong-augment.ts';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { trainingHooks } from '../../src/models/registry.ts';
import { dfineFamily } from '../../src/models/dfine/family.ts';
import { resolveRecipe } from '../../src/data/recipe.ts';
import { resolveTrainConfig } from '../../src/train/config.ts';

/** Pixel (x, y) holds (x mod 251, y mod 251, 1 + (x div 251) + 8 (y div 251)): any crop reveals its offset. */
function coded(w: number, h: number): RgbImage {
  const data = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) data.set([x % 251, y % 251, 1 + Math.floor(x / 251) + 8 * Math.floor(y / 251)], (y * w + x) * 3);
  return { data, width: w, height: h };
}
const at = (img: RgbImage, x: number, y: number): number[] => Array.from(img.data.subarray((y * img.width + x) * 3, (y * img.width + x) * 3 + 3));
const decode = ([a, b, c]: number[]): [number, number] => [a! + 251 * ((c! - 1) % 8), b! + 251 * Math.floor((c! - 1) / 8)];

describe('D-FINE strong ops', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-strong-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('zoom-out: with p 0.5, the image unchanged at a random place on a zero canvas 1-4x its sides, boxes shifted', () => {
    const img = coded(60, 40);
    const boxes = Float32Array.of(2, 10, 5, 30, 25);
    let applied = 0;
    for (let seed = 0; seed < 200; seed++) {
      const out = zoomOut({ img, boxes }, mulberry32(seed));
      if (out.img === img) continue;
      applied++;
      const { width: cw, height: ch } = out.img;
      assert.ok(cw >= 60 && cw <= 240 && ch >= 40 && ch <= 160, `canvas ${cw}x${ch}`);
      assert.ok(Math.abs(cw / 60 - ch / 40) < 0.05, 'one ratio for both sides');
      // Find the image: its top-left pixel is (0, 0, 1); everything else outside it is 0.
      let left = -1, top = -1;
      for (let y = 0; y < ch && left < 0; y++) for (let x = 0; x < cw; x++) if (at(out.img, x, y).join() === '0,0,1') { left = x; top = y; break; }
      assert.ok(left >= 0, 'the image is on the canvas');
      assert.deepEqual(at(out.img, left + 59, top + 39), at(img, 59, 39));
      if (left > 0) assert.deepEqual(at(out.img, left - 1, top), [0, 0, 0]);
      assert.deepEqual(Array.from(out.boxes), [2, 10 + left, 5 + top, 30 + left, 25 + top]);
    }
    assert.ok(applied > 70 && applied < 130, `applied ${applied} of 200 (p 0.5)`);
  });

  it('IoU crop: crops of 0.3-1 per side with aspect 0.5-2, keeping the boxes whose centre is inside, clipped; uncropped 1 in 7 at least', () => {
    const img = coded(400, 300);
    const boxes = Float32Array.of(0, 20, 30, 120, 150, 1, 200, 100, 390, 290, 2, 150, 140, 170, 160);
    let same = 0;
    for (let seed = 0; seed < 300; seed++) {
      const out = iouCrop({ img, boxes }, mulberry32(seed));
      if (out.img === img) { same++; continue; }
      const { width: nw, height: nh } = out.img;
      assert.ok(nw >= Math.trunc(400 * 0.3) && nw <= 400 && nh >= Math.trunc(300 * 0.3) && nh <= 300, `crop ${nw}x${nh}`);
      assert.ok(nw / nh >= 0.5 && nw / nh <= 2, `aspect ${nw / nh}`);
      const [left, top] = decode(at(out.img, 0, 0));
      assert.deepEqual(decode(at(out.img, nw - 1, nh - 1)), [left + nw - 1, top + nh - 1], 'a contiguous crop of the image');
      const want: number[] = [];
      for (let o = 0; o < boxes.length; o += 5) {
        const cx = (boxes[o + 1]! + boxes[o + 3]!) / 2, cy = (boxes[o + 2]! + boxes[o + 4]!) / 2;
        if (!(left < cx && cx < left + nw && top < cy && cy < top + nh)) continue;
        const c = (v: number, hi: number): number => Math.min(Math.max(v, 0), hi);
        want.push(boxes[o]!, c(boxes[o + 1]! - left, nw), c(boxes[o + 2]! - top, nh), c(boxes[o + 3]! - left, nw), c(boxes[o + 4]! - top, nh));
      }
      assert.ok(want.length > 0, 'a crop keeps at least one box');
      assert.deepEqual(Array.from(out.boxes), want.map((v) => Math.fround(v)));
    }
    assert.ok(same >= 300 / 7 * 0.6 && same < 200, `${same} of 300 uncropped`);
  });

  it('photometric distort: five ops at p 0.5 each (about 1 image in 32 untouched); a grey image stays grey', () => {
    const colour = coded(16, 16);
    let untouched = 0;
    for (let seed = 0; seed < 640; seed++) {
      const img = { ...colour, data: colour.data.slice() };
      photometricDistort(img, mulberry32(seed));
      if (img.data.every((v, k) => v === colour.data[k])) untouched++;
    }
    assert.ok(untouched >= 8 && untouched <= 35, `${untouched} of 640 untouched (expected ~20)`);
    for (let seed = 0; seed < 50; seed++) {
      const grey = { data: Uint8Array.from({ length: 8 * 8 * 3 }, (_, k) => 40 + Math.floor(k / 3)), width: 8, height: 8 };
      photometricDistort(grey, mulberry32(seed));
      for (let k = 0; k < grey.data.length; k += 3) assert.ok(grey.data[k] === grey.data[k + 1] && grey.data[k] === grey.data[k + 2], `seed ${seed}: pixel ${k / 3} is no longer grey`);
    }
  });

  it('sanitize drops boxes under 1 px; a sample without boxes is left alone', () => {
    assert.deepEqual(Array.from(sanitizeBoxes(Float32Array.of(0, 0, 0, 5, 0.5, 1, 1, 1, 4, 4))), [1, 1, 1, 4, 4]);
    const img = coded(20, 20);
    const s = { img, boxes: new Float32Array(0) };
    assert.equal(strongAugment(s, mulberry32(1)), s);
  });

  it('the loader applies them only while `strong` is on', async () => {
    const synth = await generateSynthDataset({ out: join(tmp, 'ds'), seed: 2, train: 4, val: 1, imgsz: 96, classes: ['circle'], minObjects: 1, maxObjects: 2, sizeRange: [0.3, 0.5] });
    const split = await loadDataset(synth.yaml, 'train');
    const hyp = { hsvProb: 0, flipProb: 0, mosaicProb: 0, resize: 'stretch' as const };
    const batch = async (strong: boolean): Promise<Float32Array> => {
      const loader = createLoader(split, { imgsz: 96, batch: 4, workers: 0, seed: 3, shuffle: false, hyp, strong });
      try {
        for await (const b of loader.epoch(0)) return b.images.data as Float32Array;
        throw new Error('no batch');
      } finally {
        await loader.close();
      }
    };
    const [off, off2, on] = [await batch(false), await batch(false), await batch(true)];
    assert.deepEqual(off, off2);
    assert.notDeepEqual(on, off);
  });

  it('preResize false (DEIM): the sample is the decoded image stretched once, not fitted into imgsz first; the boxes as labelled', async () => {
    const synth = await generateSynthDataset({ out: join(tmp, 'ds-unresized'), seed: 4, train: 2, val: 1, imgsz: 160, classes: ['circle'], minObjects: 1, maxObjects: 2, sizeRange: [0.3, 0.5] });
    const split = await loadDataset(synth.yaml, 'train');
    const hyp = { hsvProb: 0, flipProb: 0, mosaicProb: 0, resize: 'stretch' as const };
    const S = 64;
    const batch = async (preResize: boolean) => {
      const loader = createLoader(split, { imgsz: S, batch: 1, workers: 0, seed: 3, shuffle: false, hyp, preResize });
      try {
        for await (const b of loader.epoch(0)) return { images: b.images.data as Float32Array, targets: b.targets.data as Float32Array, path: b.paths[0]! };
        throw new Error('no batch');
      } finally {
        await loader.close();
      }
    };
    const [once, twice] = [await batch(false), await batch(true)];
    const img = await loadImageFile(once.path);
    assert.ok(img.width > S && img.height > S, `the synth image (${img.width}x${img.height}) is larger than imgsz`);
    const want = resizePilBilinear(img, S, S);
    let worst = 0;
    for (let c = 0; c < 3; c++) for (let p = 0; p < S * S; p++) worst = Math.max(worst, Math.abs(once.images[c * S * S + p]! - want.data[p * 3 + c]! / 255));
    assert.ok(worst < 1e-6, `one antialiased stretch of the decoded image (worst ${worst})`);
    assert.notDeepEqual(once.images, twice.images, 'the pre-resized sample went through two resizes');
    // Once: the label file's boxes exactly; the pre-resize truncates the height to int(H0 r), which moves y a little.
    const rows = split.labels[split.images.indexOf(once.path)]!.rows;
    for (let r = 0; r < rows.length / 5; r++) {
      const [c, cx, cy, w, h] = rows.subarray(r * 5, r * 5 + 5) as unknown as number[];
      const want = [c!, cx! - w! / 2, cy! - h! / 2, cx! + w! / 2, cy! + h! / 2];
      want.forEach((v, k) => assert.ok(Math.abs(once.targets[r * 5 + k]! - v) < 1e-5, `row ${r} field ${k}: ${once.targets[r * 5 + k]} vs ${v}`));
    }
  });

  it('they run before int(epochs x aug_stop_epoch_ratio) and never in the no-aug epochs: D-FINE\'s 132 epochs stop at 112', () => {
    const cfg = resolveTrainConfig({ data: 'x.yaml' }, () => undefined, trainingHooks(dfineFamily).defaults);
    assert.equal(cfg.aug_stop_epoch_ratio, 0.85);
    const recipe = trainingHooks(dfineFamily).augment!;
    assert.ok(recipe.some((s) => s.step === 'strong'));
    const resolved = resolveRecipe(recipe, (k) => (cfg as unknown as Record<string, unknown>)[k]);
    const on = Array.from({ length: cfg.epochs }, (_, e) => resolved.epoch(e, cfg.epochs).strong);
    assert.equal(on.indexOf(false), 112);
    assert.ok(on.slice(112).every((x) => !x));
    // Ratio 1: only the no-aug epochs go without.
    const ratio1 = resolveRecipe([{ step: 'strong', schedule: { offLast: 4, stopRatio: 1 } }], () => undefined);
    assert.equal(Array.from({ length: 10 }, (_, e) => ratio1.epoch(e, 10).strong).indexOf(false), 6);
  });
});
