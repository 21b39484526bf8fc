/**
 * Segment training targets: polygon rows carried through the loader (pre-resize, mosaic placement and
 * halving, flip, letterbox) and rasterised at a quarter of the input into the slot of their target
 * row; checked against the pixels of the batch image itself (each mask's interior has one colour, the
 * shape's), so a ring that missed a transform lands on background and fails.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fillRing } from '../../src/data/masks/fill.ts';
import { loadDataset } from '../../src/data/dataset.ts';
import { createLoader } from '../../src/data/loader.ts';
import type { AugmentHyp } from '../../src/data/augment.ts';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { tempDir } from '../helpers/temp.ts';

describe('segment mask targets', () => {
  it('a ring fills its interior and its outline (both ends of each span), as fillPoly on integer vertices', () => {
    const out = new Float32Array(6 * 5);
    fillRing([1, 1, 4, 1, 4, 3, 1, 3], 6, 5, out, 0);
    const rows = Array.from({ length: 5 }, (_, y) => [...out.subarray(y * 6, y * 6 + 6)].map((v) => (v ? '#' : '.')).join(''));
    assert.deepEqual(rows, ['......', '.####.', '.####.', '.####.', '......']);
    const tri = new Float32Array(7 * 7);
    fillRing([0, 0, 6, 0, 0, 6], 7, 7, tri, 0);
    // x + y <= 6: 28 pixels
    assert.equal(tri.reduce((a, v) => a + v, 0), 28);
  });

  const variants: { name: string; mosaic: boolean; hyp: Partial<AugmentHyp> }[] = [
    { name: 'mosaic off', mosaic: false, hyp: {} },
    { name: 'mosaic on', mosaic: true, hyp: {} },
    { name: 'mosaic through the random affine', mosaic: true, hyp: { affine: { degrees: 25, translate: 0.1, scale: [0.8, 1.3], shear: 5 } } },
    { name: 'mosaic off, scale/translate', mosaic: false, hyp: { scale: 0.3, translate: 0.15 } },
  ];
  for (const { name, mosaic, hyp } of variants) {
    it(`mask slot k lies on the shape of target row k in the batch image (${name}, flips on)`, async () => {
      const out = tempDir();
      // The mosaic halves every object: a larger input keeps interiors of a few cells at a quarter.
      const s = mosaic ? 256 : 128, m = s / 4, M = 20;
      const r = await generateSynthDataset({ out: join(out, 'seg'), train: 6, val: 1, imgsz: s, task: 'segment', seed: 5, sizeRange: [0.25, 0.45] });
      const split = await loadDataset(r.yaml, 'train');
      const loader = createLoader(split, { imgsz: s, batch: 3, workers: 0, seed: 1, maxLabels: M, masks: 4, mosaic, hyp: { hsvProb: 0, flipProb: 0.5, ...hyp } });
      let checked = 0;
      try {
        for (let epoch = 0; epoch < 2; epoch++) {
          for await (const b of loader.epoch(epoch)) {
            assert.deepEqual(b.masks!.dims, [3, M, m, m]);
            const img = b.images.data as Float32Array, masks = b.masks!.data as Float32Array, targets = b.targets.data as Float32Array;
            for (let i = 0; i < 3; i++) {
              for (let k = 0; k < M; k++) {
                const t = targets.subarray((i * M + k) * 5, (i * M + k) * 5 + 5);
                const slot = masks.subarray((i * M + k) * m * m, (i * M + k + 1) * m * m);
                if (t[0]! < 0) { assert.equal(slot.reduce((a, v) => a + v, 0), 0, 'padding slots are empty'); continue; }
                // Interior cells (every cell within 2 set): the input pixel at the cell centre.
                const colours: number[][] = [];
                for (let y = 2; y < m - 2; y++) for (let x = 2; x < m - 2; x++) {
                  let all = true;
                  for (let dy = -2; dy <= 2 && all; dy++) for (let dx = -2; dx <= 2; dx++) if (!slot[(y + dy) * m + x + dx]) { all = false; break; }
                  if (!all) continue;
                  const px = x * 4 + 2, py = y * 4 + 2;
                  colours.push([0, 1, 2].map((c) => img[((i * 3 + c) * s + py) * s + px]! * 255));
                  // inside the target box (pixels)
                  assert.ok(px >= t[1]! * s - 4 && px <= t[3]! * s + 4 && py >= t[2]! * s - 4 && py <= t[4]! * s + 4, 'interior within the box');
                }
                if (colours.length < 4) continue;
                const med = [0, 1, 2].map((c) => colours.map((v) => v[c]!).sort((a, b) => a - b)[colours.length >> 1]!);
                const same = colours.filter((v) => v.every((x, c) => Math.abs(x - med[c]!) < 30)).length;
                assert.ok(same / colours.length >= 0.95, `image ${i} row ${k}: ${same}/${colours.length} interior cells have the shape's colour (class ${t[0]})`);
                checked++;
              }
            }
          }
        }
      } finally {
        await loader.close();
      }
      assert.ok(checked >= 10, `${checked} masks checked`);
    });
  }

  it('refuses the strong ops, which it does not apply to polygons; takes the random affine and scale/translate', () => {
    const split = { images: ['a.png'], labels: [{ rows: new Float32Array(0), n: 0 }] };
    assert.throws(() => createLoader(split, { imgsz: 64, batch: 1, masks: 4, strong: true }), /Segment training does not apply the strong ops to polygons: leave them off/);
    const affine = { degrees: 10, translate: 0.1, scale: [0.5, 1.5] as const, shear: 2 };
    assert.doesNotThrow(() => createLoader(split, { imgsz: 64, batch: 1, masks: 4, hyp: { scale: 0.5, translate: 0.1, affine } }));
    assert.throws(() => createLoader(split, { imgsz: 64, batch: 1, masks: 3 }), /masks must be a ratio dividing imgsz 64, got 3/);
  });
});
