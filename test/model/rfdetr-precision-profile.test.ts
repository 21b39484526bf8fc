/**
 * RF-DETR precision and profiling: fp16 export (the original's layout, half IO) reloads and finds
 * the fp32 detections; quantize fp16/bf16 keep the family's float32 list (class/box heads, patch
 * embedding, ref-point MLP) and float32 IO; `profile infer` reads the MatMul/attention-heavy kernel
 * mix as compute-bound with the fused attention kernels under gemm.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LibreYOLO, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { summarizeModel } from '../../src/graph/onnx.ts';
import { convertPrecision, inferDtypes } from '../../src/graph/passes/precision.ts';
import { keepFloatRegion } from '../../src/runtime/engine.ts';
import type { RfdetrNetwork } from '../../src/models/rfdetr/network.ts';
import type { ProfileAnalysis } from '../../src/profile/schema.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { cli } from '../helpers/profile-fixtures.ts';
import { recall } from '../helpers/compare.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg');

describe('RF-DETR precision and profile', () => {
  let dir: string;
  let model: LibreYOLOModel;
  let ref: Results;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ly-rfdetr-prec-'));
    model = await LibreYOLO(fixture('rfdetrn_ref.pt'), { progress: false, threads: 2, warn: () => undefined });
    ref = await model.predict(PHOTO, { conf: 0.5 }) as Results;
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the keep-float list: class/box heads, patch embedding and ref-point MLP stay float32 under fp16', () => {
    const b = new GraphBuilder('q');
    (model.network as RfdetrNetwork).emitInference(b, { batch: 1, height: 384, width: 384 });
    const region = keepFloatRegion(model.family.quantize!.keepFloat)!;
    const summary = convertPrecision(b.graph, { dtype: 'float16', keepIO: true, region });
    assert.ok(summary.halfNodes > 100, `${summary.halfNodes} nodes in half`);
    const types = inferDtypes(b.graph);
    const outType = (pattern: RegExp, op: string): Set<string> => new Set(b.graph.nodes.filter((n) => pattern.test(n.name) && n.op === op).map((n) => types.get(n.outputs[0]!)!));
    for (const [pattern, op] of [[/\/class_embed\//, 'MatMul'], [/\/enc_out_class_embed\//, 'MatMul'], [/\/bbox_embed\//, 'MatMul'], [/\/ref_point_head\//, 'MatMul'], [/patch_embeddings/, 'Conv']] as const) {
      assert.deepEqual(outType(pattern, op), new Set(['float32']), `${pattern} ${op} kept float32`);
    }
    assert.ok(outType(/\/decoder\/layers\/0\/ffn\//, 'MatMul').has('float16'), 'the decoder FFN runs in half');
    assert.equal(b.graph.inputs[0]!.dtype, 'float32');
  });

  it('export half: float16 input/outputs in the original layout; LibreYOLO() reloads it and finds the fp32 detections', async () => {
    const path = await model.export({ format: 'onnx', half: true, dynamic: true, output_path: join(dir, 'rfdetrn_fp16.onnx') });
    const s = summarizeModel(new Uint8Array(readFileSync(path)));
    assert.equal(s.inputs[0]!.name, 'input');
    assert.equal(s.inputs[0]!.dtype, 'float16');
    // The class head is on the keep-float list, so its logits leave in float32.
    assert.deepEqual(s.outputs.map((o) => [o.name, o.dtype]), [['dets', 'float16'], ['labels', 'float32']]);
    assert.equal(s.metadata.get('precision'), 'fp16');
    const half = await LibreYOLO(path, { threads: 2 });
    try {
      assert.equal(half.precision, 'fp16');
      const r = await half.predict(PHOTO, { conf: 0.5 }) as Results;
      // Random fixture weights: the proposal top-k has gaps of 1e-5, so half precision re-ranks
      // proposals and slots pair differently; measured 0.83 of the fp32 detections recovered.
      assert.ok(recall(r, ref) >= 0.75, `fp16 export recall ${recall(r, ref)}`);
    } finally {
      await half.close();
    }
  });

  for (const recipe of ['fp16', 'bf16'] as const) {
    it(`quantize ${recipe}: float32 IO, predicts the fp32 detections; dequantize restores them exactly`, async () => {
      const m = await LibreYOLO(fixture('rfdetrn_ref.pt'), { progress: false, threads: 2, warn: () => undefined });
      try {
        await m.quantize({ recipe });
        assert.equal(m.precision, recipe);
        const q = await m.predict(PHOTO, { conf: 0.5 }) as Results;
        // As the fp16 export above; bf16 keeps 8 mantissa bits of every weight (measured 0.54).
        const floor = recipe === 'fp16' ? 0.75 : 0.45;
        assert.ok(recall(q, ref) >= floor, `${recipe} recall ${recall(q, ref)}`);
        await m.dequantize();
        const back = await m.predict(PHOTO, { conf: 0.5 }) as Results;
        assert.deepEqual(back.boxes.data, ref.boxes.data);
      } finally {
        await m.close();
      }
    });
  }

  it('profile infer: compute-bound, gemm first (MatMul and the fused Attention), GridSample, TopK and the unfused LayerNormalizations counted per step', async () => {
    const r = await cli('profile', 'infer', PHOTO, '--device', 'cpu', '--warmup', '1', '--runs', '2',
      '--weights', fixture('rfdetrn_ref.pt'), '--imgsz', '384', '--project', join(dir, 'p'));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, />> COMPUTE: forward dominates the step/);
    const a = JSON.parse(readFileSync(join(dir, 'p', 'infer', 'profile.json'), 'utf8')) as ProfileAnalysis & { config: { imgsz: number } };
    assert.equal(a.config.imgsz, 384);
    const cats = a.categories as Array<{ name: string; pct: number }>;
    assert.equal(cats[0]!.name, 'gemm / conv');
    assert.ok(cats[0]!.pct > 50, `gemm share ${cats[0]!.pct}%`);
    assert.ok(!cats.some((c) => c.name === 'other' && c.pct > 1), 'no kernel left uncategorised');
    const perStep = (kernel: string): number | undefined => (a.kernels as Array<{ kernel: string; count_per_step: number }>).find((k) => k.kernel === kernel)?.count_per_step;
    assert.equal(perStep('Attention'), 12, 'one fused attention per ViT layer');
    assert.equal(perStep('MultiHeadAttention'), 2, 'one per decoder layer');
    assert.equal(perStep('GridSample'), 2);
    assert.equal(perStep('TopK'), 1);
    // Residual + LayerNorm as Add + LayerNormalization, which ORT is told not to fuse: its CPU
    // SkipLayerNormalization took ~3x the pair's time (graph/contrib.ts). 45 at n (30 of them had
    // been SkipLayerNormalizations).
    assert.equal(perStep('SkipLayerNormalization'), undefined);
    assert.equal(perStep('LayerNormalization'), 45);
  });
});
