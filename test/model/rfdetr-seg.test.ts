/**
 * RF-DETR-seg against the original (../shared/fixtures/rfdetrn_seg_*): the nano checkpoint rebuilt
 * from rfdetrn_ref.pt and the delta (SHA-256 of the merged state checked), recognised as segment,
 * raw outputs within 2x the float32-vs-float64 floor, the final detections (top-k duplicates and
 * label 80 included) as sets with each mask within its near-threshold pixel count, through the
 * predict session and through an exported .onnx (dets, labels, masks) reloaded by LibreYOLO().
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { LibreYOLO, type LibreYOLOModel } from '../../src/index.ts';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { serializeModel, summarizeModel } from '../../src/graph/onnx.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import type { RfdetrNetwork } from '../../src/models/rfdetr/network.ts';
import { resolveTask } from '../../src/models/tasks.ts';
import { knownWeightNames, parseWeightName, weightsUrl } from '../../src/models/hub.ts';
import { getFamily } from '../../src/models/index.ts';
import type { Results } from '../../src/predict/results.ts';
import { readSafetensors, writeSafetensors } from '../../src/weights/safetensors.ts';
import { runsXorCount } from '../../src/data/masks/rle.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { normalizeU8 } from '../helpers/rfdetr-fixture.ts';
import { assertWithinFloors, compareAsSets, mergeRfdetrSegNano, referenceDetections } from '../helpers/seg-fixture.ts';
import { tempDir } from '../helpers/temp.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg');
const manifest = JSON.parse(readFileSync(fixture('rfdetrn_seg_ref_manifest.json'), 'utf8')) as {
  params: number; conf: number;
  fp32_vs_fp64: Record<string, { max_abs: number }>;
  topk_gaps: { image: { mask_near_0_logits: Record<string, number[]> } };
  onnx: { opset: Record<string, number> };
};
const floor = (k: string): number => 2 * manifest.fp32_vs_fp64[k]!.max_abs;
/** Pixels of each reference mask within 1e-4 of logit 0: how many a float32 port may flip. */
const nearThreshold = manifest.topk_gaps.image.mask_near_0_logits['lt_0.0001']!;
const resultRows = (r: Results) => ({ xyxy: r.boxes.xyxyData, cls: r.boxes.clsData, runs: r.masks?.runs ?? [] });

describe('RF-DETR-seg task recognition', () => {
  const rfdetr = getFamily('rfdetr');
  it('explicit task, then the checkpoint task, then the -seg suffix, then segmentation_head keys (any prefix), then detect', () => {
    const det = ['backbone.0.encoder.encoder.embeddings.cls_token', 'refpoint_embed.weight'];
    const seg = [...det, 'model.segmentation_head.bias'];
    assert.equal(resolveTask(rfdetr, { explicit: 'detect', path: 'a-seg.pt', keys: seg }), 'detect');
    assert.equal(resolveTask(rfdetr, { declared: 'segment', path: 'a.pt', keys: det }), 'segment');
    assert.equal(resolveTask(rfdetr, { path: '/w/LibreRFDETRxx-seg.pt', keys: det }), 'segment');
    assert.equal(resolveTask(rfdetr, { path: 'a.pt', keys: seg }), 'segment');
    assert.equal(resolveTask(rfdetr, { path: 'a.pt', keys: det }), 'detect');
  });

  it('hub names LibreRFDETR<size>-seg.pt for n..xx (x and xx are segment-only) download from LibreYOLO/<name>', () => {
    assert.deepEqual(parseWeightName('weights/LibreRFDETRxx-seg.pt'), { family: 'rfdetr', size: 'xx', taskSuffix: '-seg', stem: 'LibreRFDETRxx-seg' });
    assert.deepEqual(parseWeightName('LibreRFDETRx-seg.pt'), { family: 'rfdetr', size: 'x', taskSuffix: '-seg', stem: 'LibreRFDETRx-seg' });
    const known = knownWeightNames().filter((n) => n.startsWith('LibreRFDETR'));
    assert.deepEqual(known, ['n', 's', 'm', 'l'].map((s) => `LibreRFDETR${s}.pt`).concat(['n', 's', 'm', 'l', 'x', 'xx'].map((s) => `LibreRFDETR${s}-seg.pt`)));
    assert.equal(weightsUrl('LibreRFDETRn-seg'), 'https://huggingface.co/LibreYOLO/LibreRFDETRn-seg/resolve/main/LibreRFDETRn-seg.pt');
  });
});

describe('parity with the original RF-DETR-seg n', () => {
  const dir = tempDir();
  const path = join(dir, 'rfdetrn_seg_ref.pt');
  let io: Map<string, HostTensor>;
  let model: LibreYOLOModel;
  let merged: Awaited<ReturnType<typeof mergeRfdetrSegNano>>;

  before(async () => {
    io = readSafetensors(new Uint8Array(readFileSync(fixture('rfdetrn_seg_ref_io.safetensors'))), 'io').tensors;
    merged = await mergeRfdetrSegNano(path);
    model = await LibreYOLO(path, { progress: false, threads: 2 });
  });
  after(async () => {
    await model?.close();
  });

  it('the merge by the recipe gives the original state (SHA-256), 544 keys', () => {
    assert.equal(merged.sha256, merged.expected);
    assert.equal(merged.stateDict.size, 544);
  });

  it('loads as RF-DETR-seg n from the checkpoint: task segment, 312x312, the original parameter count', () => {
    assert.equal(model.family.name, 'rfdetr');
    assert.equal(model.task, 'segment');
    assert.equal(model.size, 'n');
    assert.deepEqual(model.imgsz, [312, 312]);
    assert.equal(model.parameterCount(), manifest.params);
  });

  for (const s of ['1x3x312x312', '2x3x156x120']) {
    it(`raw pred_logits, pred_boxes, pred_masks at ${s} within 2x the float64 floor (export graph)`, async (t) => {
      const [batch, , height, width] = s.split('x').map(Number) as [number, number, number, number];
      const b = new GraphBuilder();
      (model.network as RfdetrNetwork).emitExport(b, { batch, height, width, rawOutputs: true });
      const session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2 });
      try {
        const x = normalizeU8(io.get(`input_u8_${s}`)!);
        const out = await session.run({ input: new ort.Tensor('float32', x.data as Float32Array, x.dims) });
        const errs: Record<string, number> = {};
        const pairs: Array<[string, string]> = [['labels', 'pred_logits'], ['dets', 'pred_boxes'], ['masks', 'pred_masks'], ['enc_topk_token_index', 'enc_topk_token_index']];
        if (batch === 1) pairs.push(['projector_p4', 'projector_p4'], ['seg_query_features', 'seg_query_features']);
        for (const [ours, ref] of pairs) {
          const e = io.get(`${ref}_${s}`)!;
          const a = out[ours]!;
          assert.deepEqual([...a.dims], e.dims, ours);
          let m = 0;
          const av = a.data as ArrayLike<number | bigint>, ev = e.data as ArrayLike<number | bigint>;
          for (let i = 0; i < ev.length; i++) m = Math.max(m, Math.abs(Number(av[i]!) - Number(ev[i]!)));
          errs[ref] = m;
        }
        t.diagnostic(`${s}: ${Object.entries(errs).map(([k, v]) => `${k} ${v.toExponential(2)}`).join(', ')}`);
        assert.equal(errs.enc_topk_token_index, 0, 'the same two-stage proposals');
        assert.ok(errs.pred_logits! <= floor('pred_logits'), `pred_logits ${errs.pred_logits}`);
        assert.ok(errs.pred_boxes! <= floor('pred_boxes'), `pred_boxes ${errs.pred_boxes}`);
        assert.ok(errs.pred_masks! <= floor('pred_masks'), `pred_masks ${errs.pred_masks}`);
      } finally {
        await session.release();
      }
    });
  }

  const checkPhoto = (label: string, r: Results, diagnostic: (m: string) => void): void => {
    assert.ok(r.masks);
    assert.deepEqual(r.masks.shape, [20, 852, 1280]);
    const ref = referenceDetections(io, 'image_det_', '');
    assertWithinFloors(label, compareAsSets(resultRows(r), ref), nearThreshold, diagnostic);
    // The original's top-k quirks survive: label 80 (the extra column) and queries picked twice.
    assert.ok(Array.from(r.boxes.clsData).includes(80), 'a detection of label 80');
    const shared = new Set(r.masks.runs).size;
    assert.equal(r.masks.length - shared, 5, 'five queries picked twice share their mask');
  };

  it(`predict(parkour.jpg, conf ${manifest.conf}): the 20 detections as sets, masks at 852x1280 within their near-threshold pixels`, async (t) => {
    const r = await model.predictOne(PHOTO, { conf: manifest.conf });
    checkPhoto('photo', r, (m) => t.diagnostic(m));
  });

  it('batch 2 and stream give each image the masks it gets alone', async () => {
    const sample = join(REPO_ROOT, 'assets/sample.jpg');
    const alone = [await model.predictOne(PHOTO, { conf: 0.3 }), await model.predictOne(sample, { conf: 0.3 })];
    assert.ok(alone.every((r) => r.masks && r.masks.length > 0), 'both images have masks at conf 0.3');
    const batched = await model.predict([PHOTO, sample], { conf: 0.3, batch: 2 });
    const streamed: Results[] = [];
    for await (const r of model.predict([PHOTO, sample], { conf: 0.3, stream: true })) streamed.push(r);
    for (const got of [batched, streamed]) {
      got.forEach((r, i) => {
        assert.deepEqual(r.masks?.shape, alone[i]!.masks?.shape, `image ${i}`);
        const diff = r.masks!.runs.reduce((n, runs, k) => n + runsXorCount(runs, alone[i]!.masks!.runs[k]!), 0);
        assert.ok(diff <= 20, `image ${i}: ${diff} mask pixels differ from the single-image run`);
      });
    }
  });

  it('quantize fp16 keeps the segment outputs: each detection carries its mask, most of the float32 detections stay', async () => {
    const full = await model.predictOne(PHOTO, { conf: manifest.conf });
    const half = await LibreYOLO(path, { progress: false, threads: 2 });
    try {
      await half.quantize({ recipe: 'fp16' });
      const r = await half.predictOne(PHOTO, { conf: manifest.conf });
      assert.ok(r.masks && r.masks.length === r.length, `${r.length} detections, ${r.masks?.length} masks`);
      assert.deepEqual(r.masks.shape.slice(1), full.masks!.shape.slice(1), 'masks at the photo size');
      assert.ok(r.length >= 0.75 * full.length, `fp16 keeps ${r.length} of the ${full.length} float32 detections`);
    } finally {
      await half.close();
    }
  });

  it('a seg checkpoint whose mask head has the wrong shape is refused naming the key; detection asked of seg weights fails on their unexpected keys, or on the checkpoint task', async () => {
    const bad = new Map(merged.stateDict);
    bad.set('segmentation_head.blocks.1.dwconv.weight', { dtype: 'float32', dims: [256, 1, 5, 5], data: new Float32Array(256 * 25) });
    const badPath = join(dir, 'bad-head-seg.safetensors');
    writeFileSync(badPath, writeSafetensors(bad, { model_family: 'rfdetr', size: 'n', task: 'segment' }));
    await assert.rejects(LibreYOLO(badPath, { progress: false }),
      /Shape mismatch for segmentation_head\.blocks\.1\.dwconv\.weight: checkpoint has \[256, 1, 5, 5\], the rfdetr-n network expects \[256, 1, 3, 3\]/);
    const bare = join(dir, 'bare.safetensors');
    writeFileSync(bare, writeSafetensors(merged.stateDict, {}));
    await assert.rejects(LibreYOLO(bare, { progress: false, task: 'detect' }), /Unexpected RF-DETR checkpoint keys: \['transformer\.decoder\.layers\.2\./);
    // The v1.0 checkpoint says segment: asked for detect, the original's RF-DETR words.
    await assert.rejects(LibreYOLO(path, { progress: false, task: 'detect' }), /RF-DETR checkpoint appears to be task='segment', but task='detect' was requested\./);
  });

  it('an exported .onnx (dets, labels, masks; opset 17; task segment) reloads through LibreYOLO() with the same parity', async (t) => {
    const onnxPath = await model.export({ format: 'onnx', output_path: join(dir, 'rfdetrn-seg.onnx') });
    const summary = summarizeModel(new Uint8Array(readFileSync(onnxPath)));
    assert.deepEqual(summary.outputs.map((o) => [o.name, o.shape]), [['dets', [1, 100, 4]], ['labels', [1, 100, 81]], ['masks', [1, 100, 78, 78]]]);
    assert.equal(summary.opset, manifest.onnx.opset['ai.onnx']);
    assert.equal(summary.metadata.get('task'), 'segment');
    assert.equal(summary.metadata.get('segmentation'), 'true');
    assert.equal(summary.metadata.get('supported_tasks'), '["segment"]');
    assert.equal(summary.metadata.get('default_task'), 'segment');
    const onnx = await LibreYOLO(onnxPath, { progress: false, threads: 2 });
    try {
      assert.equal(onnx.task, 'segment');
      assert.deepEqual(onnx.imgsz, [312, 312]);
      checkPhoto('onnx photo', await onnx.predictOne(PHOTO, { conf: manifest.conf }), (m) => t.diagnostic(m));
    } finally {
      await onnx.close();
    }
  });
});
