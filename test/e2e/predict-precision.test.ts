/**
 * Precision: the `half` predict warning (once, the original's text), fp16 ONNX export that reloads
 * and runs on the CPU provider, detections of fp16 models matching fp32, `quantize` recipes and their
 * errors, and a precision report that says what the CPU provider really computed in.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { LibreYOLO, SAMPLE_IMAGE, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { loadImageFile } from '../../src/data/image.ts';
import { letterbox } from '../../src/data/letterbox.ts';
import { summarizeModel } from '../../src/graph/onnx.ts';
import { unregisterFamily } from '../../src/models/registry.ts';
import { runCli } from '../helpers/cli.ts';
import { FIXTURE_MODEL, loadAs, registerTestFamily } from '../helpers/test-families.ts';

const HALF_WARNING = "half=true changes nothing here: a model runs in the precision it was loaded or quantized in (float32 for .pt and .safetensors weights; an exported .onnx keeps its own). For float16, export with half=true (export({ half: true }), `libreyolo export format=onnx half=true`) or quantize (quantize({ recipe: 'fp16' }), `libreyolo quantize recipe=fp16`).";
const CONF = 0.000165;

type Box = [number, number, number, number];
function iou(a: Box, b: Box): number {
  const w = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
  const h = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const inter = w * h;
  return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter);
}

/**
 * The anchor each detection came from: its box is that anchor's raw box divided by the letterbox
 * ratio and clamped, bit for bit (float32), which identifies it among the output's anchors.
 */
function anchorsOf(r: Results, raw: Float32Array, ratio: number): number[] {
  const A = raw.length / 84;
  const f = Math.fround(ratio);
  const [H, W] = r.orig_shape;
  const clamp = (v: number, hi: number): number => Math.min(Math.max(Math.fround(v / f), 0), hi);
  return r.boxes.xyxy.map(([x1, y1, x2, y2]) => {
    for (let a = 0; a < A; a++) {
      if (clamp(raw[a]!, W) === x1 && clamp(raw[A + a]!, H) === y1 && clamp(raw[2 * A + a]!, W) === x2 && clamp(raw[3 * A + a]!, H) === y2) return a;
    }
    return -1;
  });
}

describe('precision', () => {
  let dir: string;
  let model: LibreYOLOModel;
  let fp16Path: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ly-precision-'));
    model = await LibreYOLO(FIXTURE_MODEL(), { progress: false });
    fp16Path = await model.export({ format: 'onnx', half: true, dynamic: true, output_path: join(dir, 'yolo9t_fp16.onnx') });
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('half: true at predict warns once, saying what it does here, and changes nothing', async () => {
    const warnings: string[] = [];
    const m = await LibreYOLO(FIXTURE_MODEL(), { progress: false, warn: (w) => warnings.push(w) });
    try {
      const plain = await m.predict(SAMPLE_IMAGE, { conf: CONF, imgsz: 320 }) as Results;
      const half = await m.predict(SAMPLE_IMAGE, { conf: CONF, imgsz: 320, half: true }) as Results;
      await m.predict(SAMPLE_IMAGE, { conf: CONF, imgsz: 320, half: true });
      assert.deepEqual(warnings, [HALF_WARNING]);
      assert.deepEqual(half.boxes.data, plain.boxes.data);
    } finally {
      await m.close();
    }
  });

  it('CLI: --half on a .pt model prints the same notice and runs in float32', async () => {
    const run = await runCli(['predict', `model=${FIXTURE_MODEL()}`, 'half=true', 'imgsz=320'], dir);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(run.stderr.includes(`Warning: ${HALF_WARNING}\n`), run.stderr);
    assert.doesNotMatch(run.stderr, /PyTorch|TensorRT/);
  });

  it('export(half: true) writes a float16 model with the original metadata', () => {
    const s = summarizeModel(new Uint8Array(readFileSync(fp16Path)));
    assert.equal(s.inputs[0]!.dtype, 'float16');
    assert.equal(s.outputs[0]!.dtype, 'float16');
    assert.equal(s.metadata.get('precision'), 'fp16');
    assert.equal(s.metadata.get('half'), 'True');
  });

  it('the fp16 file reloads through LibreYOLO() and predicts on the CPU provider; its detections match fp32', async () => {
    const m16 = await LibreYOLO(fp16Path, { progress: false });
    try {
      assert.equal(m16.precision, 'fp16');
      assert.equal(m16.device.id, 'cpu');
      const image = await loadImageFile(SAMPLE_IMAGE);
      const lb = letterbox(image, 640);
      const input = { dtype: 'float32' as const, dims: lb.dims, data: lb.tensor };
      const raw32 = (await model.forward(input)).data as Float32Array;
      const raw16 = (await m16.forward(input)).data as Float32Array;
      // Every anchor's box agrees (the fixture's scores are near-ties, so compare boxes per anchor).
      const A = raw32.length / 84;
      let worst = 1;
      for (let a = 0; a < A; a++) {
        const box = (r: Float32Array): Box => [r[a]!, r[A + a]!, r[2 * A + a]!, r[3 * A + a]!];
        worst = Math.min(worst, iou(box(raw32), box(raw16)));
      }
      assert.ok(worst >= 0.9, `worst per-anchor IoU ${worst}`);

      const r32 = await model.predict(SAMPLE_IMAGE, { conf: CONF }) as Results;
      const r16 = await m16.predict(SAMPLE_IMAGE, { conf: CONF }) as Results;
      const a32 = anchorsOf(r32, raw32, lb.ratio);
      const a16 = anchorsOf(r16, raw16, lb.ratio);
      assert.ok(!a32.includes(-1) && !a16.includes(-1), 'every detection traced to its anchor');
      // Matched boxes: the same anchor and class detected by both models.
      const matched: number[] = [];
      a32.forEach((anchor, i) => {
        const j = a16.findIndex((b, k) => b === anchor && r16.boxes.cls[k] === r32.boxes.cls[i]);
        if (j >= 0) matched.push(iou(r32.boxes.xyxy[i] as Box, r16.boxes.xyxy[j] as Box));
      });
      assert.ok(matched.length >= 10, `${matched.length} matched detections of ${r32.length} / ${r16.length}`);
      assert.ok(Math.min(...matched) >= 0.9, `worst matched IoU ${Math.min(...matched)}`);
    } finally {
      await m16.close();
    }
  });

  it("quantize refuses unknown recipes, other families, the original's other recipes, and a second quantize", async () => {
    await assert.rejects(model.quantize({ recipe: 'fp12' }),
      /^QuantizationError: Unknown quantization recipe 'fp12'\. Available: fp16, bf16, fp8, int8, w4a16, w4a8, nvfp4, mxfp4, int2$/m);
    await assert.rejects(model.quantize({ recipe: 'int8' }), /Recipe 'int8' needs calibrated low-bit kernels.*available here: fp16, bf16/);
    registerTestFamily('test_noquant', {}, { quantize: undefined });
    const other = await loadAs('test_noquant', dir);
    try {
      await assert.rejects(other.quantize({ recipe: 'fp16' }),
        /Quantization is not supported for model family 'test_noquant' yet\. Supported families: yolo9\b/);
    } finally {
      await other.close();
      unregisterFamily('test_noquant');
    }
    const m16 = await LibreYOLO(fp16Path, { progress: false });
    try {
      await assert.rejects(m16.quantize({ recipe: 'bf16' }), /Model is already quantized \(recipe='fp16'\)\. Load a float checkpoint to quantize with a different recipe\./);
    } finally {
      await m16.close();
    }
  });

  it('quantize fp16: warns on CPU, ignores calib, keeps float32 IO; the report shows what the CPU provider ran', async () => {
    const warnings: string[] = [];
    const m = await LibreYOLO(FIXTURE_MODEL(), { progress: false, warn: (w) => warnings.push(w) });
    try {
      const before32 = await m.predict(SAMPLE_IMAGE, { conf: CONF, imgsz: 320 }) as Results;
      await m.quantize({ recipe: 'FP16', calib: 'coco128.yaml' });
      assert.deepEqual(warnings, ['fp16 on CPU is functional but slow; use a GPU device.']);
      assert.equal(m.precision, 'fp16');
      await assert.rejects(m.quantize({ recipe: 'bf16' }), /already quantized \(recipe='fp16'\)/);
      const q = await m.predict(SAMPLE_IMAGE, { conf: CONF, imgsz: 320 }) as Results;
      assert.ok(q.length > 0);
      const report = await m.precisionReport({ imgsz: 320 });
      assert.equal(report.precision, 'fp16');
      assert.deepEqual(report.io, { input: 'float32', output: 'float32' });
      assert.deepEqual(report.providers, ['CPUExecutionProvider']);
      const parts = Object.fromEntries(report.parts.map((p) => [p.part, p]));
      for (const part of ['backbone', 'neck', 'head', 'decode']) assert.ok(parts[part], `part ${part} reported`);
      // What really ran: data movement in float16, while the CPU provider computed the
      // convolutions in float32 behind casts it inserted itself.
      assert.ok((parts.backbone!.by_dtype.float16 ?? 0) > 0, 'some kernels ran in float16');
      assert.ok(report.runtime_inserted_casts > 0);
      assert.deepEqual(Object.keys(parts.backbone!.ops.Conv ?? {}), ['float32']);
      assert.ok(report.summary.some((l) => /^backbone: \d+ kernels .*Conv: float32/.test(l)));
      await m.dequantize();
      const back = await m.predict(SAMPLE_IMAGE, { conf: CONF, imgsz: 320 }) as Results;
      assert.deepEqual(back.boxes.data, before32.boxes.data, 'dequantize is exact: the weights were never modified');
    } finally {
      await m.close();
    }
  });

  it('quantize bf16: ops without CPU bfloat16 kernels stay float32 islands, and the report says so', async () => {
    const m = await LibreYOLO(FIXTURE_MODEL(), { progress: false, warn: () => undefined });
    try {
      await m.quantize({ recipe: 'bf16' });
      const r = await m.predict(SAMPLE_IMAGE, { conf: CONF, imgsz: 320 }) as Results;
      assert.ok(r.length > 0);
      const report = await m.precisionReport({ imgsz: 320 });
      assert.equal(report.precision, 'bf16');
      assert.ok((report.kept_float32_ops.Conv ?? 0) > 100, 'no bf16 Conv kernel on CPU');
      assert.ok(report.parts.every((p) => !p.by_dtype.bfloat16), 'nothing computed in bfloat16 on CPU');
      // The model file says bfloat16 weights; the islands read them through casts ORT folds at load.
      const out = join(dir, 'yolo9t-bf16.onnx');
      assert.equal(await m.export({ format: 'onnx', imgsz: 320, output_path: out }), out);
      const s = summarizeModel(new Uint8Array(readFileSync(out)));
      assert.equal(s.inputs[0]!.dtype, 'float32');
      assert.equal(s.metadata.get('precision'), 'bf16');
      assert.equal(s.metadata.get('quant_recipe'), 'bf16');
      const session = await ort.InferenceSession.create(out);
      await session.release();
      const reloaded = await LibreYOLO(out, { progress: false });
      try {
        assert.equal(reloaded.precision, 'bf16');
        const rr = await reloaded.predict(SAMPLE_IMAGE, { conf: CONF, imgsz: 320 }) as Results;
        assert.equal(rr.length, r.length);
      } finally {
        await reloaded.close();
      }
    } finally {
      await m.close();
    }
  });

  it('CLI: libreyolo quantize writes a reloadable quantized model', async () => {
    const out = join(dir, 'cli-fp16.onnx');
    const run = await runCli(['quantize', `model=${FIXTURE_MODEL()}`, 'recipe=fp16', `out=${out}`, 'calib=none'], dir);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Quantized yolo9 to fp16/);
    assert.equal(summarizeModel(new Uint8Array(readFileSync(out))).metadata.get('quant_recipe'), 'fp16');
    const bad = await runCli(['quantize', `model=${FIXTURE_MODEL()}`, 'recipe=fp12'], dir);
    assert.equal(bad.code, 5);
    assert.match(bad.stderr, /Unknown quantization recipe 'fp12'/);
  });
});
