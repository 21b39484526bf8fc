/**
 * Predict controls on YOLOX (the reference YOLOX-n on the original's photo): stacked batches and
 * streams give the per-image results, TTA merges the mirrored view, tiling stitches tiles, `classes`
 * filters after max_det, `half` warns, graph capture is refused for the family, the fp16 export
 * reloads and predicts like float32, and quantize fp16/bf16 runs with float32 IO.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LibreYOLO, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { loadImageFile } from '../../src/data/image.ts';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { HALF_NOTICE } from '../../src/predict/options.ts';
import { cropImage, sliceBoxes } from '../../src/predict/tiling.ts';
import { flipHorizontal } from '../../src/predict/tta.ts';
import { setSpanRecorder, type HostSpan } from '../../src/runtime/spans.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg');
type Row = number[];

function assertRowsClose(got: Row[], want: Row[], what: string, boxTol = 1e-3, scoreTol = 1e-4): void {
  assert.equal(got.length, want.length, `${what}: ${got.length} rows, expected ${want.length}`);
  got.forEach((r, k) => {
    const w = want[k]!;
    assert.equal(r[5], w[5], `${what}: row ${k} class`);
    assert.ok(Math.abs(r[4]! - w[4]!) <= scoreTol, `${what}: row ${k} score ${r[4]} vs ${w[4]}`);
    for (let j = 0; j < 4; j++) assert.ok(Math.abs(r[j]! - w[j]!) <= boxTol, `${what}: row ${k} coordinate ${j}: ${r[j]} vs ${w[j]}`);
  });
}

async function withSpans<T>(fn: () => Promise<T>): Promise<{ value: T; spans: HostSpan[] }> {
  const spans: HostSpan[] = [];
  setSpanRecorder({ record: (s) => spans.push(s) });
  try {
    return { value: await fn(), spans };
  } finally {
    setSpanRecorder(null);
  }
}

describe('predict controls on YOLOX-n', () => {
  let model: LibreYOLOModel;
  let photo: RgbImage;
  const warnings: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'libreyolo-yolox-predict-'));

  before(async () => {
    model = await LibreYOLO(fixture('yoloxn_ref.pt'), { progress: false, warn: (w) => warnings.push(w) });
    photo = await loadImageFile(PHOTO);
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const one = async (source: RgbImage | string, opts: Record<string, unknown> = {}): Promise<Results> => {
    const r = await model.predict(typeof source === 'string' ? source : { ...source }, opts);
    assert.ok(!Array.isArray(r));
    return r;
  };

  it('batch: three images stacked in one forward give each image its own results; stream yields the same in order', async () => {
    const images = [photo, flipHorizontal(photo), cropImage(photo, [200, 100, 1000, 700])];
    const single: Results[] = [];
    for (const img of images) single.push(await one(img));
    assert.ok(single[0]!.length >= 10, 'the photo has its 12 detections');
    const { value: batched, spans } = await withSpans(() => model.predict(images.map((i) => ({ ...i })), { batch: 3 }));
    assert.deepEqual(spans.filter((s) => s.name === 'forward').map((s) => s.args?.batch), [3], 'one stacked forward');
    batched.forEach((r, k) => assertRowsClose(r.boxes.data, single[k]!.boxes.data, `batched image ${k}`));
    let k = 0;
    for await (const r of model.predict(images.map((i) => ({ ...i })), { batch: 2, stream: true })) {
      assertRowsClose(r.boxes.data, single[k]!.boxes.data, `streamed image ${k}`);
      k++;
    }
    assert.equal(k, 3);
  });

  it('augment: the mirrored view runs too and the merge is mirror-symmetric', async () => {
    const { value: a, spans } = await withSpans(() => one(photo, { augment: true }));
    assert.equal(spans.filter((s) => s.name === 'letterbox').length, 2, 'original and mirrored view');
    const plain = await one(photo);
    assert.ok(a.boxes.conf[0]! >= plain.boxes.conf[0]!, 'the best plain detection survives the merge');
    const b = await one(flipHorizontal(photo), { augment: true });
    const W = photo.width;
    const mirrored = b.boxes.data.map(([x1, y1, x2, y2, c, k]) => [W - x2!, y1!, W - x1!, y2!, c!, k!]);
    assertRowsClose(a.boxes.data, mirrored, 'TTA of the mirrored photo, mirrored back', 1e-2);
  });

  it('tiling: tiles of the input size are stitched in original pixels, each row from one tile', async () => {
    const r = await one(photo, { tiling: true });
    const slices = sliceBoxes(photo.width, photo.height, 416, 0.2);
    assert.equal(r.tiled, true);
    assert.equal(r.num_tiles, slices.length);
    assert.ok(r.length > 0);
    const fromTiles: Row[] = [];
    for (const s of slices) {
      const t = await one(cropImage(photo, s), { imgsz: 416 });
      for (const [x1, y1, x2, y2, c, k] of t.boxes.data) fromTiles.push([x1! + s[0], y1! + s[1], x2! + s[0], y2! + s[1], c!, k!]);
    }
    // A full 416x416 tile has letterbox ratio 1, so its boxes are not clamped (yolox.md 3.3), as in the original.
    for (const row of r.boxes.data) {
      assert.ok(fromTiles.some((t) => t.every((v, j) => Math.abs(v - row[j]!) <= 1e-3)), `row ${row.join(',')} is a tile's detection`);
    }
  });

  it('classes filters after max_det (yolox.md 3.1)', async () => {
    const all = await one(photo);
    const top = all.boxes.data.slice(0, 4);
    const cls = top[3]![5]!;
    const only = await one(photo, { max_det: 4, classes: [cls] });
    assert.deepEqual(only.boxes.data, top.filter((r) => r[5] === cls));
  });

  it('half warns once (the notice says what it does here) and changes nothing; graph capture is refused for yolox', async () => {
    const plain = await one(photo);
    const half = await one(photo, { half: true });
    assert.deepEqual(half.boxes.data, plain.boxes.data);
    assert.equal(warnings.filter((w) => w.includes(HALF_NOTICE)).length, 1, warnings.join('\n'));
    await assert.rejects(one(photo, { cuda_graph: true }), /cuda_graph is not supported for the 'yolox' family yet/);
    const cpu = await one(photo, { device: 'cpu' });
    assert.deepEqual(cpu.boxes.data, plain.boxes.data);
  });

  it('exports fp16 (float16 IO) that reloads and finds the same objects', async () => {
    const path = await model.export({ format: 'onnx', half: true, output_path: join(dir, 'yoloxn_fp16.onnx') });
    const half = await LibreYOLO(path);
    try {
      assert.equal(half.family.name, 'yolox');
      assert.equal(half.metadata.precision, 'fp16');
      const r = await half.predict(PHOTO);
      assert.ok(!Array.isArray(r));
      const plain = await one(PHOTO);
      // Random weights are poorly conditioned: fp16 compute moves boxes by up to ~3 px and scores by
      // up to ~0.06 on this photo (measured), and flips weak rows. The clear detections must stay.
      const clear = plain.boxes.data.filter((row) => row[4]! >= 0.4);
      assert.ok(clear.length >= 4);
      for (const row of clear) {
        assert.ok(r.boxes.data.some((o) => o[5] === row[5] && Math.abs(o[4]! - row[4]!) <= 0.08 && o.slice(0, 4).every((v, j) => Math.abs(v - row[j]!) <= 4)), `fp32 row ${row.join(',')} has no fp16 counterpart`);
      }
      assert.ok(Math.abs(r.length - plain.length) <= 2);
    } finally {
      await half.close();
    }
  });

  it('quantize fp16 and bf16 keep float32 IO and the clear detections; the quantized export reloads; dequantize is exact', async () => {
    const m = await LibreYOLO(fixture('yoloxn_ref.pt'), { progress: false, warn: (w) => warnings.push(w) });
    try {
      const plain = await m.predict(PHOTO);
      assert.ok(!Array.isArray(plain));
      const clear = plain.boxes.data.filter((row) => row[4]! >= 0.4);
      await m.quantize({ recipe: 'fp16' });
      assert.equal(m.precision, 'fp16');
      assert.ok(warnings.includes('fp16 on CPU is functional but slow; use a GPU device.'));
      const q = await m.predict(PHOTO);
      assert.ok(!Array.isArray(q));
      for (const row of clear) {
        assert.ok(q.boxes.data.some((o) => o[5] === row[5] && Math.abs(o[4]! - row[4]!) <= 0.08 && o.slice(0, 4).every((v, j) => Math.abs(v - row[j]!) <= 4)), `fp32 row ${row.join(',')} has no fp16 counterpart`);
      }
      const path = await m.export({ format: 'onnx', output_path: join(dir, 'yoloxn-fp16.onnx') });
      const reloaded = await LibreYOLO(path);
      try {
        assert.equal(reloaded.precision, 'fp16');
        const r = await reloaded.predict(PHOTO);
        assert.ok(!Array.isArray(r));
        assertRowsClose(r.boxes.data, q.boxes.data, 'quantized export vs quantized model', 1e-2, 1e-3);
      } finally {
        await reloaded.close();
      }
      await m.dequantize();
      const back = await m.predict(PHOTO);
      assert.ok(!Array.isArray(back));
      assert.deepEqual(back.boxes.data, plain.boxes.data, 'dequantize is exact');
      await m.quantize({ recipe: 'bf16' });
      assert.equal(m.precision, 'bf16');
      const b = await m.predict(PHOTO);
      assert.ok(!Array.isArray(b) && b.length > 0);
    } finally {
      await m.close();
    }
  });
});
