/**
 * YOLOv9-seg against the original (../shared/fixtures/yolo9t_seg_ref*): the segment task recognised
 * in the original's precedence, the network's parameter counts, raw outputs within 2x the
 * float32-vs-float64 floor, and final detections (as sets) with masks within each mask's
 * near-threshold pixel count, through the predict sessions and through an exported .onnx reloaded
 * by LibreYOLO().
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LibreYOLO, type LibreYOLOModel } from '../../src/index.ts';
import { getFamily } from '../../src/models/index.ts';
import { resolveTask } from '../../src/models/tasks.ts';
import { LibreYOLOError } from '../../src/errors.ts';
import { readSafetensors, writeSafetensors } from '../../src/weights/safetensors.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { flipRuns, runsXorCount } from '../../src/data/masks/rle.ts';
import { loadImageFile } from '../../src/data/image.ts';
import { flipHorizontal } from '../../src/predict/tta.ts';
import { segmentDetections } from '../../src/predict/segment.ts';
import type { ImageOutput } from '../../src/predict/pipeline.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import type { Results } from '../../src/predict/results.ts';
import { buildExportGraph } from '../../src/runtime/graph-engine.ts';
import { serializeModel, summarizeModel } from '../../src/graph/onnx.ts';
import { exportMetadata } from '../../src/export/metadata.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { assertWithinFloors, compareAsSets, referenceDetections } from '../helpers/seg-fixture.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg');
const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-seg-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

interface Manifest {
  fp32_vs_fp64: Record<string, { max_abs: number }>;
  topk_gaps: Record<string, { mask_near_0_5_pixels?: never } & Record<string, unknown>>;
}
const manifest = JSON.parse(readFileSync(fixture('yolo9t_seg_ref_manifest.json'), 'utf8')) as Manifest;
/** Pixels of each reference mask within 1e-4 of probability 0.5: how many a float32 port may flip. */
const nearThreshold = (key: string): number[] => ((manifest.topk_gaps[key] as Record<string, Record<string, number[]>>)['mask_near_0.5_pixels']!)['lt_0.0001']!;
const floor = (k: string): number => 2 * manifest.fp32_vs_fp64[k]!.max_abs;

const resultRows = (r: Results) => ({ xyxy: r.boxes.xyxyData, cls: r.boxes.clsData, runs: r.masks?.runs ?? [] });

describe('YOLOv9-seg task recognition', () => {
  const yolo9 = getFamily('yolo9');
  const detectKeys = ['backbone.conv0.conv.weight', 'head.cv4.0.0.conv.weight'];
  const segKeys = [...detectKeys, 'head.proto.cv1.conv.weight'];

  it('explicit task, then the checkpoint task, then the -seg suffix, then head.proto keys, then detect', () => {
    assert.equal(resolveTask(yolo9, { explicit: 'seg', declared: 'detect', path: 'a.pt', keys: detectKeys }), 'segment');
    assert.equal(resolveTask(yolo9, { explicit: 'detect', declared: 'segment', path: 'a-seg.pt', keys: segKeys }), 'detect');
    assert.equal(resolveTask(yolo9, { declared: 'segmentation', path: 'a.pt', keys: detectKeys }), 'segment');
    assert.equal(resolveTask(yolo9, { declared: 'detect', path: 'a-seg.pt', keys: segKeys }), 'detect');
    assert.equal(resolveTask(yolo9, { path: '/w/LibreYOLO9t-seg.pt', keys: detectKeys }), 'segment');
    assert.equal(resolveTask(yolo9, { path: 'a.pt', keys: segKeys }), 'segment');
    // head.cv4 alone is also in pose and OBB heads: no sign of segment.
    assert.equal(resolveTask(yolo9, { path: 'a.pt', keys: detectKeys }), 'detect');
  });

  it('pose, classify and the other tasks keep their refusal', () => {
    for (const task of ['pose', 'classify', 'obb']) {
      assert.throws(() => resolveTask(yolo9, { explicit: task, path: 'a.pt', keys: [] }),
        (e: Error & { code?: string }) => e.code === 'config_unsupported' && e.message === `Task '${task}' is not supported yet: this package runs detection and instance segmentation (segment) models only.`);
    }
    // Read from the file, the task makes it a model this package cannot load (exit 4), not a bad argument.
    assert.throws(() => resolveTask(yolo9, { path: 'LibreYOLO9t-pose.pt', keys: [] }), (e: LibreYOLOError) => e.code === 'model_task_unsupported' && e.exitCode === 4 && /Task 'pose' is not supported yet/.test(e.message));
    assert.throws(() => resolveTask(yolo9, { declared: 'obb', path: 'a.pt', keys: [] }), (e: LibreYOLOError) => e.exitCode === 4);
    assert.throws(() => resolveTask(getFamily('yolox'), { explicit: 'segment', path: 'a.pt', keys: [] }), /YOLOX models run the tasks detect; task 'segment' is not one of them/);
  });

  it('YOLOv9-seg t/s/m/c have the original parameter and key counts; the segment head adds 60 keys', () => {
    const want = { t: [2_897_248, 1398], s: [8_317_296, 1398], m: [21_963_024, 966], c: [27_542_544, 996] } as const;
    for (const [size, [params, keys]] of Object.entries(want)) {
      const seg = yolo9.create({ size, task: 'segment' });
      const det = yolo9.create({ size });
      assert.equal(seg.parameterCount(), params, size);
      assert.equal([...seg.namedTensors()].length, keys, size);
      assert.equal([...seg.namedTensors()].length - [...det.namedTensors()].length, 60, size);
    }
  });

  it('a segment checkpoint whose mask head has the wrong shape is refused, naming the key', async () => {
    const { stateDict } = await loadCheckpointFile(fixture('yolo9t_seg_ref.pt'));
    const bad = new Map(stateDict);
    bad.set('head.cv4.1.0.conv.weight', { dtype: 'float32', dims: [32, 64, 3, 3], data: new Float32Array(32 * 64 * 9) });
    const path = join(tmp, 'bad-head-seg.safetensors');
    writeFileSync(path, writeSafetensors(bad, { model_family: 'yolo9', size: 't', task: 'segment' }));
    await assert.rejects(LibreYOLO(path, { progress: false }),
      /Shape mismatch for head\.cv4\.1\.0\.conv\.weight: checkpoint has \[32, 64, 3, 3\], the yolo9-t network expects \[32,96,3,3\]/);
  });

  it('a detection checkpoint asked for segment is refused with the original message', async () => {
    await assert.rejects(LibreYOLO(fixture('yolo9t_ref.pt'), { progress: false, task: 'segment' }), /./);
    const path = fixture('yolo9t_seg_ref.pt');
    await assert.rejects(LibreYOLO(path, { progress: false, task: 'detect' }),
      new RegExp(`Failed to load model weights from .*yolo9t_seg_ref\\.pt: Checkpoint was trained for task='segment' but this model was initialized for task='detect'\\. Pass the matching task or use the correct checkpoint\\.`));
  });
});

describe('parity with the original YOLOv9-t-seg', () => {
  let io: Map<string, HostTensor>;
  let model: LibreYOLOModel;

  before(async () => {
    io = readSafetensors(new Uint8Array(readFileSync(fixture('yolo9t_seg_ref_io.safetensors'))), 'io').tensors;
    model = await LibreYOLO(fixture('yolo9t_seg_ref.pt'), { progress: false });
  });
  after(async () => {
    await model.close();
  });

  const input = (s: string): HostTensor => {
    const u8 = io.get(`input_u8_${s}`)!;
    return { dtype: 'float32', dims: u8.dims, data: Float32Array.from(u8.data as Uint8Array, (v) => v / 255) };
  };

  it('loads as a segment model from the checkpoint task', () => {
    assert.equal(model.task, 'segment');
    assert.equal(model.parameterCount(), 2_897_248);
  });

  for (const s of ['1x3x640x640', '2x3x192x128']) {
    it(`raw predictions, proto and mask_coeffs at ${s} within 2x the float64 floor`, async (t) => {
      const r = await model.engine.forward(input(s));
      const got: Record<string, HostTensor> = { predictions: r.output, ...r.extra };
      const errs: Record<string, number> = { boxes: 0, scores: 0, proto: 0, mask_coeffs: 0 };
      for (const k of ['predictions', 'proto', 'mask_coeffs']) {
        const ref = io.get(`${k}_${s}`)!;
        assert.deepEqual(got[k]!.dims, ref.dims, k);
        const a = got[k]!.data as Float32Array, e = ref.data as Float32Array;
        const A = ref.dims[2]!;
        for (let i = 0; i < e.length; i++) {
          const d = Math.abs(a[i]! - e[i]!);
          const key = k !== 'predictions' ? k : Math.floor(i / A) % ref.dims[1]! < 4 ? 'boxes' : 'scores';
          if (!(d <= errs[key]!)) errs[key] = d;
        }
      }
      t.diagnostic(`${s}: ${Object.entries(errs).map(([k, v]) => `${k} ${v.toExponential(2)}`).join(', ')}`);
      assert.ok(errs.boxes! <= floor('pred_boxes'), `boxes ${errs.boxes}`);
      assert.ok(errs.scores! <= floor('pred_scores'), `scores ${errs.scores}`);
      assert.ok(errs.proto! <= floor('proto'), `proto ${errs.proto}`);
      assert.ok(errs.mask_coeffs! <= floor('mask_coeffs'), `mask_coeffs ${errs.mask_coeffs}`);
    });
  }

  it('predict(parkour.jpg, conf 0.05, iou 0.45): the 33 detections as sets, each mask within its near-threshold pixels', async (t) => {
    const r = await model.predictOne(PHOTO, { conf: 0.05, iou: 0.45 });
    assert.ok(r.masks);
    assert.deepEqual(r.masks.shape, [33, 852, 1280]);
    assertWithinFloors('photo', compareAsSets(resultRows(r), referenceDetections(io, 'image_det_', '')), nearThreshold('image'), (m) => t.diagnostic(m));
  });

  it('the postprocess of the reference raw batch with pretend originals crops rows (250x200) and columns (300x180) as the original', (t) => {
    const s = '2x3x192x128';
    const outputs = { output: io.get(`predictions_${s}`)!, proto: io.get(`proto_${s}`)!, mask_coeffs: io.get(`mask_coeffs_${s}`)! };
    const originals: Array<[number, number]> = [[250, 200], [300, 180]];
    originals.forEach(([h, w], b) => {
      const ratio = Math.min(192 / h, 128 / w);
      const o = {
        outputs, index: b, image: { width: w, height: h, data: new Uint8Array(0) },
        plan: { dims: [1, 3, 192, 128], dtype: 'float32', ratio, write: () => undefined },
      } as unknown as ImageOutput<null>;
      const { det, masks } = segmentDetections(getFamily('yolo9'), o, { conf: 0.0229, iou: 0.45, maxDet: 300, classes: null });
      const cmp = compareAsSets({ xyxy: det.xyxy, cls: det.cls, runs: masks?.runs ?? [] }, referenceDetections(io, 'det_', `_${s}[${b}]`));
      // Same raw outputs as the reference: only float64-vs-float32 arithmetic in the postprocess itself can flip a pixel.
      assertWithinFloors(`${h}x${w}`, cmp, nearThreshold(`${s}[${b}]`), (m) => t.diagnostic(m));
    });
  });

  it('an exported .onnx (predictions, proto, mask_coeffs; task segment) reloads through LibreYOLO() with the same parity', async (t) => {
    const path = await model.export({ format: 'onnx', output_path: join(tmp, 'yolo9t-seg.onnx') });
    const summary = summarizeModel(new Uint8Array(readFileSync(path)));
    assert.deepEqual(summary.outputs.map((o) => [o.name, o.shape]), [['predictions', [1, 84, 8400]], ['proto', [1, 32, 160, 160]], ['mask_coeffs', [1, 32, 8400]]]);
    assert.equal(summary.metadata.get('task'), 'segment');
    assert.equal(summary.metadata.get('segmentation'), 'true');
    assert.equal(summary.opset, 13);
    const onnx = await LibreYOLO(path, { progress: false });
    try {
      assert.equal(onnx.task, 'segment');
      const r = await onnx.predictOne(PHOTO, { conf: 0.05, iou: 0.45 });
      assertWithinFloors('onnx photo', compareAsSets(resultRows(r), referenceDetections(io, 'image_det_', '')), nearThreshold('image'), (m) => t.diagnostic(m));
    } finally {
      await onnx.close();
    }
  });

  it('batch 2 and stream give each image the masks it gets alone', async () => {
    const sample = join(REPO_ROOT, 'assets/sample.jpg');
    const alone = [await model.predictOne(PHOTO, { conf: 0.05 }), await model.predictOne(sample, { conf: 0.05 })];
    const batched = await model.predict([PHOTO, sample], { conf: 0.05, batch: 2 });
    const streamed: Results[] = [];
    for await (const r of model.predict([PHOTO, sample], { conf: 0.05, stream: true })) streamed.push(r);
    for (const got of [batched, streamed]) {
      got.forEach((r, i) => {
        assert.deepEqual(r.masks?.shape, alone[i]!.masks?.shape, `image ${i}`);
        const diff = r.masks!.runs.reduce((s, runs, k) => s + runsXorCount(runs, alone[i]!.masks!.runs[k]!), 0);
        assert.ok(diff <= 20, `image ${i}: ${diff} mask pixels differ from the single-image run`);
      });
    }
  });

  it('augment: TTA merges the mirrored view with its masks mirrored back (TTA of the mirrored photo is the mirror image)', async () => {
    const photo = await loadImageFile(PHOTO);
    const a = await model.predictOne(photo, { conf: 0.05, augment: true });
    const b = await model.predictOne(flipHorizontal(photo), { conf: 0.05, augment: true });
    const plain = await model.predictOne(photo, { conf: 0.05 });
    assert.ok(a.masks && b.masks && a.length === a.masks.length && a.length === b.length, `${a.length} vs ${b.length} detections`);
    assert.notDeepEqual(a.masks.runs, plain.masks!.runs, 'the merge took rows from the mirrored view');
    const W = photo.width;
    for (let i = 0; i < a.length; i++) {
      const [x1, y1, x2, y2] = a.boxes.xyxy[i]!;
      const j = b.boxes.xyxy.findIndex(([u1, v1, u2, v2]) => Math.abs(W - u2 - x1) < 1e-3 && Math.abs(v1 - y1) < 1e-3 && Math.abs(W - u1 - x2) < 1e-3 && Math.abs(v2 - y2) < 1e-3);
      assert.ok(j >= 0, `detection ${i} has a mirrored partner`);
      assert.equal(runsXorCount(flipRuns(b.masks.runs[j]!, W, photo.height), a.masks.runs[i]!), 0, `mask ${i} is the mirror of its partner's`);
    }
  });

  it('tiling is refused for segment models with the original message', async () => {
    await assert.rejects(model.predictOne(PHOTO, { tiling: true }), /Tiled inference does not support segmentation masks\. Use non-tiled inference for instance segmentation\./);
  });

  it('quantize fp16 keeps the segment outputs: masks still come back', async () => {
    const q = await LibreYOLO(fixture('yolo9t_seg_ref.pt'), { progress: false });
    try {
      await q.quantize({ recipe: 'fp16' });
      const r = await q.predictOne(PHOTO, { conf: 0.05, iou: 0.45 });
      assert.ok(r.masks && r.masks.length === r.length && r.length >= 30, `${r.length} detections, ${r.masks?.length} masks`);
    } finally {
      await q.close();
    }
  });

  it('a .onnx whose metadata says segment but whose outputs are a detector\'s is refused', async () => {
    const graph = buildExportGraph(getFamily('yolo9').create({ size: 't', nc: 2 }), { batch: 1, height: 64, width: 64 });
    graph.metadata = exportMetadata({ version: '0', family: 'yolo9', size: 't', task: 'segment', names: { 0: 'a', 1: 'b' }, imgsz: [64, 64], dynamic: false, precision: 'fp32' });
    const path = join(tmp, 'fake-seg.onnx');
    writeFileSync(path, serializeModel(graph, { opset: 13 }));
    await assert.rejects(LibreYOLO(path, { progress: false }),
      /metadata field 'task' is 'segment', but its outputs are output; a yolo9 segment export has a box output then proto, mask_coeffs/);
  });
});
