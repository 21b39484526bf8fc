/** Checks shared by the per-family predict-control tests (test/dfine-predict, test/rfdetr-predict). */
import assert from 'node:assert/strict';
import type { LibreYOLOModel, Results } from '../../src/index.ts';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { mergeDetections, truncate } from '../../src/predict/merge.ts';
import { cropImage, sliceBoxes } from '../../src/predict/tiling.ts';

/** Same rows in the same order: classes equal, scores and box corners within the tolerances. */
export function assertResultsClose(a: Results, b: Results, boxTol: number, scoreTol: number): void {
  assert.equal(a.length, b.length, 'detection count');
  for (let i = 0; i < a.length; i++) {
    assert.equal(a.boxes.clsData[i], b.boxes.clsData[i], `row ${i} class`);
    assert.ok(Math.abs(a.boxes.confData[i]! - b.boxes.confData[i]!) <= scoreTol, `row ${i} score`);
    for (let c = 0; c < 4; c++) assert.ok(Math.abs(a.boxes.xyxyData[i * 4 + c]! - b.boxes.xyxyData[i * 4 + c]!) <= boxTol, `row ${i} box`);
  }
}

/**
 * `tiling: true` on `image` equals predicting each `tile`-sized slice (overlap 0.2) on its own,
 * offsetting its boxes and merging them by per-class NMS at 0.45 (max 300), at conf 0.5.
 */
export async function assertTilingMatchesTiles(model: LibreYOLOModel, image: RgbImage, tile: number): Promise<void> {
  const slices = sliceBoxes(image.width, image.height, tile, 0.2);
  assert.ok(slices.length >= 2);
  const parts = [];
  for (const [x1, y1, x2, y2] of slices) {
    const r = await model.predict({ ...cropImage(image, [x1, y1, x2, y2]) }, { conf: 0.5 }) as Results;
    parts.push({ xyxy: Float32Array.from(r.boxes.xyxyData, (v, k) => v + (k % 2 === 0 ? x1 : y1)), conf: r.boxes.confData, cls: r.boxes.clsData });
  }
  const expected = truncate(mergeDetections(parts, 0.45), 300);
  const tiled = await model.predict({ ...image }, { conf: 0.5, tiling: true }) as Results;
  assert.equal(tiled.tiled, true);
  assert.equal(tiled.num_tiles, slices.length);
  assert.deepEqual(Array.from(tiled.boxes.xyxyData), Array.from(expected.xyxy));
  assert.deepEqual(Array.from(tiled.boxes.confData), Array.from(expected.conf));
}
