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
import { DEFAULT_MODEL_PATH, LibreYOLO, LibreYOLOModel, SAMPLE_IMAGE, SAMPLE_LARGE_IMAGE, type Results } from '../../src/index.ts';
import { tilingScene } from '../../src/data/demo-scenes.ts';
import { loadImageFile } from '../../src/data/image.ts';
import { unregisterFamily } from '../../src/models/registry.ts';
import { mergeDetections, truncate } from '../../src/predict/merge.ts';
import type { Detections } from '../../src/predict/postprocess.ts';
import { mergeTiles, type MergeRule } from '../../src/predict/tile-merge.ts';
import { cropImage, sliceBoxes } from '../../src/predict/tiling.ts';
import { FIXTURE_MODEL, loadAs, registerTestFamily } from '../helpers/test-families.ts';

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
    assert.throws(() => sliceBoxes(10, 10, 4, 1), /overlap_ratio must be in \[0, 1\), got 1$/);
    assert.throws(() => sliceBoxes(10, 10, 4, Number.NaN), /overlap_ratio must be in \[0, 1\), got NaN/);
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
    await assert.rejects(model.predict(missing, { tiling: true, overlap_ratio: 1 }), /overlap_ratio must be in \[0, 1\), got 1$/);
    await assert.rejects(model.predict(missing, { tiling: true, overlap_ratio: '0.2' as unknown as number }), /overlap_ratio must be a number, got "0\.2"$/);
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

/** Rows as [x1, y1, x2, y2, conf, cls] for hand-built merge cases. */
function dets(rows: number[][]): Detections {
  return { xyxy: Float32Array.from(rows.flatMap((r) => r.slice(0, 4))), conf: Float32Array.from(rows.map((r) => r[4]!)), cls: Float32Array.from(rows.map((r) => r[5]!)) };
}
const rowsOf = (d: Detections): number[][] => Array.from(d.conf, (c, k) => [...d.xyxy.subarray(4 * k, 4 * k + 4), Math.round(c * 100) / 100, d.cls[k]!]);
const rule = (type: MergeRule['type'], metric: MergeRule['metric'], threshold = 0.5, classAgnostic = false): MergeRule => ({ type, metric, threshold, classAgnostic });

describe('tile merge rules (SAHI postprocess_type / match_metric / class_agnostic)', () => {
  // A full box, a partial box of it cut by a tile edge (IoU 0.4, IoS 1), of another class, and a far box.
  const full = [0, 0, 100, 100, 0.9, 0];
  const partial = [0, 0, 40, 100, 0.6, 4];
  const far = [300, 300, 340, 340, 0.8, 1];

  it('the default rule is the original merge (per-class NMS at iou) and leaves partial boxes of another class', () => {
    const parts = [dets([full, far]), dets([partial])];
    assert.deepEqual(rowsOf(mergeTiles(parts, rule('NMS', 'IOU', 0.45), 0.45)), rowsOf(mergeDetections(parts, 0.45)));
    assert.equal(mergeTiles(parts, rule('NMS', 'IOU', 0.45), 0.45).conf.length, 3);
  });

  it('IOS matches a partial box inside a full one where IOU does not; class_agnostic lets classes match', () => {
    const same = [dets([full]), dets([[...partial.slice(0, 5), 0]])];
    assert.equal(mergeTiles(same, rule('NMS', 'IOU'), 0.45).conf.length, 2, 'IoU 0.4 is not above 0.5');
    assert.deepEqual(rowsOf(mergeTiles(same, rule('NMS', 'IOS'), 0.45)), [full]);
    const other = [dets([full, far]), dets([partial])];
    assert.equal(mergeTiles(other, rule('NMS', 'IOS'), 0.45).conf.length, 3, 'per class: the ellipse partial stays');
    assert.deepEqual(rowsOf(mergeTiles(other, rule('NMS', 'IOS', 0.5, true), 0.45)), [full, far]);
  });

  it('GREEDYNMM merges matches into the union box with the best score and its class', () => {
    const parts = [dets([[10, 0, 100, 100, 0.9, 0]]), dets([[0, 0, 40, 110, 0.6, 4], far])];
    assert.deepEqual(rowsOf(mergeTiles(parts, rule('GREEDYNMM', 'IOS', 0.5, true), 0.45)), [[0, 0, 100, 110, 0.9, 0], far]);
  });

  it('NMM lets a cluster grow through a chain of matches where GREEDYNMM stops at the first box', () => {
    // A matches B, B matches C, A does not match C.
    const a = [0, 0, 100, 100, 0.9, 0], b = [50, 0, 150, 100, 0.8, 0], c = [100, 0, 200, 100, 0.7, 0];
    const parts = [dets([a, b, c])];
    const greedy = rowsOf(mergeTiles(parts, rule('GREEDYNMM', 'IOU', 0.2), 0.45));
    assert.deepEqual(greedy, [[0, 0, 150, 100, 0.9, 0], c]);
    // NMM: b claims c for a's cluster; c is merged while it still matches the growing box (IoU 50/200 > 0.2).
    assert.deepEqual(rowsOf(mergeTiles(parts, rule('NMM', 'IOU', 0.2), 0.45)), [[0, 0, 200, 100, 0.9, 0]]);
  });

  it('refuses merge options without tiling, and bad values, before reading the image', async () => {
    const m = await LibreYOLO(DEFAULT_MODEL_PATH, { progress: false });
    try {
      const missing = '/nonexistent/x.jpg';
      await assert.rejects(m.predict(missing, { postprocess_type: 'GREEDYNMM', class_agnostic: true }),
        /^LibreYOLOError: postprocess_type, class_agnostic apply to tiled inference only: add tiling=true or remove them\.$/m);
      await assert.rejects(m.predict(missing, { tiling: true, postprocess_type: 'LSNMS' as 'NMS' }), /postprocess_type must be one of NMS, NMM, GREEDYNMM, got "LSNMS"/);
      await assert.rejects(m.predict(missing, { tiling: true, match_metric: 'IOA' as 'IOU' }), /match_metric must be one of IOU, IOS, got "IOA"/);
      await assert.rejects(m.predict(missing, { tiling: true, match_threshold: 1.5 }), /match_threshold must be in \[0, 1\], got 1\.5/);
      await assert.rejects(m.predict(missing, { tiling: true, class_agnostic: 'yes' as unknown as boolean }), /class_agnostic must be true or false, got "yes"/);
    } finally {
      await m.close();
    }
  });
});

describe('tile merge on assets/sample-large.jpg (48 shapes, bundled model)', () => {
  let model: LibreYOLOModel;
  const truth = tilingScene().objects;
  before(async () => { model = await LibreYOLO(DEFAULT_MODEL_PATH, { progress: false }); });
  after(async () => { await model.close(); });

  /** Shapes that got exactly one box, of their class, at IoU >= 0.5 (each box goes to the shape it overlaps most). */
  function onePerShape(r: Results): number {
    const perShape = truth.map(() => [] as number[]);
    r.boxes.xyxy.forEach((b, k) => {
      let best = -1, bestIou = 0;
      truth.forEach((t, j) => { const v = boxIou(b as number[], [t.x1, t.y1, t.x2, t.y2]); if (v > bestIou) { bestIou = v; best = j; } });
      if (best >= 0) perShape[best]!.push(k);
    });
    return perShape.filter((ks, j) => ks.length === 1 && r.boxes.clsInt(ks[0]!) === truth[j]!.cls &&
      boxIou(r.boxes.xyxy[ks[0]!] as number[], [truth[j]!.x1, truth[j]!.y1, truth[j]!.x2, truth[j]!.y2]) >= 0.5).length;
  }

  it('GREEDYNMM with IOS (class-agnostic) gives one right box per shape; the per-class NMS default keeps partial boxes', async () => {
    assert.equal(truth.length, 48);
    const nms = await model.predict(SAMPLE_LARGE_IMAGE, { tiling: true }) as Results;
    const greedy = await model.predict(SAMPLE_LARGE_IMAGE, { tiling: true, postprocess_type: 'GREEDYNMM', match_metric: 'IOS', class_agnostic: true }) as Results;
    const nmsGood = onePerShape(nms), greedyGood = onePerShape(greedy);
    assert.ok(nms.length > 48 && nmsGood < 46, `NMS default: ${nms.length} boxes, ${nmsGood}/48 shapes with exactly one right box`);
    assert.ok(greedyGood >= 46, `GREEDYNMM+IOS: ${greedyGood}/48 shapes with exactly one right box (${greedy.length} boxes)`);
    assert.ok(greedy.length <= 50, `GREEDYNMM+IOS: ${greedy.length} boxes for 48 shapes`);
  });

  it('perform_standard_pred adds the whole-image pass to the tiles before the merge', async () => {
    // At 160 px the whole 1600x1200 image finds nothing (shapes shrink to ~3 px), so take a scene the
    // full pass can see: the 640x360 sample, tiled at 160 px, where tiles cut the big shapes apart.
    const image = await loadImageFile(SAMPLE_IMAGE);
    const opts = { tiling: true, postprocess_type: 'NMS', match_metric: 'IOS', class_agnostic: true } as const;
    const full = await model.predict({ ...image }, { imgsz: 160 }) as Results;
    assert.ok(full.length >= 6, `the whole-image pass finds the big shapes (${full.length})`);
    const parts: Detections[] = [{ xyxy: full.boxes.xyxyData, conf: full.boxes.confData, cls: full.boxes.clsData }];
    for (const [x1, y1, x2, y2] of sliceBoxes(image.width, image.height, 160, 0.2)) {
      const r = await model.predict({ ...cropImage(image, [x1, y1, x2, y2]) }, { imgsz: 160 }) as Results;
      parts.push({ xyxy: Float32Array.from(r.boxes.xyxyData, (v, k) => v + (k % 2 === 0 ? x1 : y1)), conf: r.boxes.confData, cls: r.boxes.clsData });
    }
    const expected = mergeTiles(parts, rule('NMS', 'IOS', 0.45, true), 0.45);
    const withFull = await model.predict({ ...image }, { ...opts, perform_standard_pred: true }) as Results;
    const tilesOnly = await model.predict({ ...image }, opts) as Results;
    assert.deepEqual(Array.from(withFull.boxes.xyxyData), Array.from(expected.xyxy));
    assert.notDeepEqual(Array.from(withFull.boxes.xyxyData), Array.from(tilesOnly.boxes.xyxyData));
  });
});

function boxIou(a: number[], b: number[]): number {
  const w = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!)), h = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
  const i = w * h;
  return i / ((a[2]! - a[0]!) * (a[3]! - a[1]!) + (b[2]! - b[0]!) * (b[3]! - b[1]!) - i);
}
