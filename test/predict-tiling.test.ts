/**
 * Tiled inference: the original's grid and validation, per-tile offsets and the per-class NMS merge
 * (checked against tiles predicted one by one), batched tiles equal to sequential ones, the skip
 * when the image fits, the task gates, and the `runs/tiled_detections/...` save layout.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { LibreYOLO, LibreYOLOModel, SAMPLE_IMAGE, type Results } from '../src/index.ts';
import { loadImageFile } from '../src/data/image.ts';
import { unregisterFamily } from '../src/models/registry.ts';
import { mergeDetections, truncate } from '../src/predict/merge.ts';
import { cropImage, sliceBoxes } from '../src/predict/tiling.ts';
import { FIXTURE_MODEL, loadAs, registerTestFamily } from './helpers/test-families.ts';

const CONF = 0.00016;
const S = 320;

describe('tile grid (get_slice_bboxes)', () => {
  it('covers the image row-major with the last row and column snapped to the edges', () => {
    assert.deepEqual(sliceBoxes(64, 64, 32, 0), [[0, 0, 32, 32], [32, 0, 64, 32], [0, 32, 32, 64], [32, 32, 64, 64]]);
    assert.deepEqual(sliceBoxes(33, 33, 32, 0.99), [[0, 0, 32, 32], [1, 0, 33, 32], [0, 1, 32, 33], [1, 1, 33, 33]]);
    // overlap floor(640*0.2)=128, step 512: x at 0, 512, 1024, then 1360 snapped flush right.
    const wide = sliceBoxes(2000, 500, 640, 0.2);
    assert.deepEqual(wide, [[0, 0, 640, 500], [512, 0, 1152, 500], [1024, 0, 1664, 500], [1360, 0, 2000, 500]]);
  });

  it('validates its inputs with the original messages', () => {
    assert.throws(() => sliceBoxes(10.5, 10, 4, 0.2), /image_width must be an integer, got number\./);
    assert.throws(() => sliceBoxes(10, 0, 4, 0.2), /image_height must be positive, got 0\./);
    assert.throws(() => sliceBoxes(10, 10, 4, 1), /overlap_ratio must be finite and in \[0, 1\), got 1\./);
    assert.throws(() => sliceBoxes(10, 10, 4, Number.NaN), /overlap_ratio must be finite/);
  });
});

describe('tiled predict', () => {
  let dir: string;
  let big: string;
  let model: LibreYOLOModel;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ly-tiling-'));
    big = join(dir, 'big.png');
    await sharp(SAMPLE_IMAGE).resize(700, 500, { fit: 'fill' }).png().toFile(big);
    model = await LibreYOLO(FIXTURE_MODEL(), { progress: false });
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses bad overlap ratios, rectangular sizes and augment before reading the image', async () => {
    const missing = join(dir, 'missing.jpg');
    await assert.rejects(model.predict(missing, { tiling: true, overlap_ratio: 1 }), /overlap_ratio must be finite and in \[0, 1\), got 1\./);
    await assert.rejects(model.predict(missing, { tiling: true, overlap_ratio: '0.2' as unknown as number }), /overlap_ratio must be a real number, got string\./);
    await assert.rejects(model.predict(missing, { tiling: true, augment: true }), /^LibreYOLOError: tiling and augment cannot be used together\. Disable one of them\.$/m);
    await assert.rejects(model.predict(big, { tiling: true, imgsz: [320, 416] }),
      /Tiled inference requires a square imgsz \(tiles are square\)\. Got imgsz=\(320, 416\); pass a single int or disable tiling\./);
  });

  it('refuses tasks whose payloads cannot be stitched, before loading anything', async () => {
    const cases: Array<[string, RegExp]> = [
      ['segment', /Tiled inference does not support segmentation masks\. Use non-tiled inference for instance segmentation\./],
      ['obb', /Tiled inference does not support oriented boxes yet\. Use non-tiled inference for OBB models\./],
      ['depth', /Tiled inference does not support depth maps yet\./],
      ['edge', /Tiled inference does not support edge, normal, or albedo maps yet\./],
      ['point', /Tiled inference does not support point results yet\./],
      ['pose', /Tiled inference does not support pose keypoints yet\./],
    ];
    for (const [task, message] of cases) {
      const m = new LibreYOLOModel({ ...modelInit(model), task });
      await assert.rejects(m.predict(join(dir, 'missing.jpg'), { tiling: true }), message);
    }
  });

  it('is skipped (one plain forward, no tiled field) when the image fits the input size', async () => {
    const plain = await model.predict(big, { conf: CONF, imgsz: 704 }) as Results;
    const tiled = await model.predict(big, { conf: CONF, imgsz: 704, tiling: true }) as Results;
    assert.equal(tiled.tiled, undefined);
    assert.equal(tiled.num_tiles, undefined);
    assert.deepEqual(tiled.boxes.data, plain.boxes.data);
  });

  it('offsets every tile and merges by per-class NMS then max_det, exactly as tiles predicted one by one', async () => {
    const image = await loadImageFile(big);
    const slices = sliceBoxes(image.width, image.height, S, 0.2);
    assert.equal(slices.length, 6);
    const parts = [];
    for (const [x1, y1, x2, y2] of slices) {
      const r = await model.predict({ ...cropImage(image, [x1, y1, x2, y2]) }, { conf: CONF, imgsz: S }) as Results;
      const xyxy = Float32Array.from(r.boxes.xyxyData, (v, k) => v + (k % 2 === 0 ? x1 : y1));
      parts.push({ xyxy, conf: r.boxes.confData, cls: r.boxes.clsData });
    }
    const expected = truncate(mergeDetections(parts, 0.45), 50);
    const tiled = await model.predict(big, { conf: CONF, imgsz: S, tiling: true, max_det: 50 }) as Results;
    assert.equal(tiled.tiled, true);
    assert.equal(tiled.num_tiles, 6);
    assert.equal(tiled.length, 50);
    assert.deepEqual(Array.from(tiled.boxes.xyxyData), Array.from(expected.xyxy));
    assert.deepEqual(Array.from(tiled.boxes.confData), Array.from(expected.conf));
    assert.ok(tiled.boxes.xyxy.some(([x1]) => x1! > S), 'boxes are in full-image coordinates');
  });

  it('stacks the tiles in chunks of `batch` with the same result as one tile per forward', async () => {
    const m = await LibreYOLO(FIXTURE_MODEL(), { progress: false });
    try {
      const one = await m.predict(big, { conf: CONF, imgsz: S, tiling: true, batch: 1 }) as Results;
      const four = await m.predict(big, { conf: CONF, imgsz: S, tiling: true, batch: 4 }) as Results;
      assert.equal(four.length, one.length);
      four.boxes.xyxyData.forEach((v, k) => assert.ok(Math.abs(v - one.boxes.xyxyData[k]!) <= 1e-3));
      assert.deepEqual(m.engine.sessionKeys().sort(), ['cpu|float32|1x3x320x320', 'cpu|float32|2x3x320x320', 'cpu|float32|4x3x320x320']);
    } finally {
      await m.close();
    }
  });

  it('keeps tiles one per forward for a family that opts out of batching', async () => {
    registerTestFamily('test_tiles_nobatch', { SUPPORTS_BATCHED_PREDICT: false });
    const m = await loadAs('test_tiles_nobatch', dir);
    try {
      const r = await m.predict(big, { conf: CONF, imgsz: S, tiling: true, batch: 4 }) as Results;
      assert.equal(r.num_tiles, 6);
      assert.deepEqual(m.engine.sessionKeys(), ['cpu|float32|1x3x320x320']);
    } finally {
      await m.close();
      unregisterFamily('test_tiles_nobatch');
    }
  });

  it('save: true writes tiles, the annotated image, the grid and metadata.json under runs/tiled_detections', async () => {
    const r = await model.predict(big, { conf: CONF, imgsz: S, tiling: true, batch: 3, save: true, project_dir: dir, overlap_ratio: 0.25 }) as Results;
    const run = r.saved_path!;
    assert.equal(join(dir, 'runs', 'tiled_detections'), join(run, '..'));
    assert.match(basename(run), /^big_yolo9_t_\d{8}_\d{6}_\d{6}$/);
    assert.equal(r.tiles_path, join(run, 'tiles'));
    assert.equal(r.grid_path, join(run, 'grid_visualization.jpg'));
    assert.deepEqual(readdirSync(run).sort(), ['final_image.jpg', 'grid_visualization.jpg', 'metadata.json', 'tiles']);
    const slices = sliceBoxes(700, 500, S, 0.25);
    assert.deepEqual(readdirSync(r.tiles_path!).sort(), slices.map((_, k) => `tile_${String(k).padStart(3, '0')}.jpg`));
    for (const [k, [x1, y1, x2, y2]] of slices.entries()) {
      const tile: { width?: number; height?: number } = await sharp(join(r.tiles_path!, `tile_${String(k).padStart(3, '0')}.jpg`)).metadata();
      assert.deepEqual([tile.width, tile.height], [x2 - x1, y2 - y1]);
    }
    const final = await sharp(join(run, 'final_image.jpg')).metadata();
    assert.deepEqual([final.width, final.height], [700, 500]);
    // The grid is drawn in red over the image: its top-left pixel is the first tile's outline.
    const { data } = await sharp(r.grid_path!).raw().toBuffer({ resolveWithObject: true });
    assert.ok(data[0]! > 200 && data[1]! < 60 && data[2]! < 60, `red outline, got ${data[0]},${data[1]},${data[2]}`);
    const metadata = JSON.parse(readFileSync(join(run, 'metadata.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(Object.keys(metadata), ['model', 'size', 'image_source', 'original_size', 'num_tiles', 'tile_size', 'overlap_ratio', 'num_detections', 'conf', 'iou']);
    assert.deepEqual(metadata, {
      model: 'yolo9', size: 't', image_source: big, original_size: [700, 500], num_tiles: slices.length,
      tile_size: S, overlap_ratio: 0.25, num_detections: r.length, conf: CONF, iou: 0.45,
    });
  });

  it('names in-memory images like the original and honours output_path', async () => {
    const image = await loadImageFile(big);
    const out = join(dir, 'custom');
    const [r] = await model.predict([{ ...image }], { conf: CONF, imgsz: S, tiling: true, save: true, output_path: out, output_file_format: 'png' }) as Results[];
    assert.match(basename(r!.saved_path!), /^image0_yolo9_t_\d{8}_\d{6}_\d{6}$/);
    assert.equal(join(r!.saved_path!, '..'), out);
    assert.ok(existsSync(join(r!.saved_path!, 'final_image.png')));
    const metadata = JSON.parse(readFileSync(join(r!.saved_path!, 'metadata.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(metadata.image_source, 'PIL/numpy input');
  });
});

function modelInit(m: LibreYOLOModel): ConstructorParameters<typeof LibreYOLOModel>[0] {
  return {
    family: m.family, size: m.size, task: m.task, names: m.names, imgsz: m.imgsz, weightsPath: m.weightsPath,
    format: m.format, network: m.network, engine: m.engine,
  };
}
