/**
 * D-FINE export, precision and profile: the original's layout (`images` -> `pred_logits`,
 * `pred_boxes`, opset 17, dynamic batch; a static batch-2 export too) reloaded by LibreYOLO() with
 * and without metadata and checked against dfinen_ref_io at batch 1 and 2; a half export; quantize
 * fp16/bf16 with the family's keep-float list; `profile infer` counting D-FINE's kernels.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LibreYOLO, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { deserializeModel, serializeModel, summarizeModel } from '../../src/graph/onnx.ts';
import { convertPrecision, inferDtypes } from '../../src/graph/passes/precision.ts';
import { buildInferenceGraph } from '../../src/runtime/graph-engine.ts';
import { keepFloatRegion } from '../../src/runtime/engine.ts';
import type { ProfileAnalysis } from '../../src/profile/schema.ts';
import { recall } from '../helpers/compare.ts';
import { assertPhotoDetections, DFINE_SHAPES, inputOf, limitsOf, predictLayoutErrors, readDfineIo, type DfineIo } from '../helpers/dfine-fixture.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { cli } from '../helpers/profile-fixtures.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg');

async function assertFixtureParity(m: LibreYOLOModel, io: DfineIo, what: string): Promise<void> {
  const lim = limitsOf(io);
  for (const shape of DFINE_SHAPES) {
    const { box, score } = predictLayoutErrors(await m.forward(inputOf(io, shape)), io, shape);
    assert.ok(box <= lim.box && score <= lim.score, `${what} at ${shape}: box ${box.toExponential(2)} px (limit ${lim.box.toExponential(2)}), score ${score.toExponential(2)} (limit ${lim.score.toExponential(2)})`);
  }
}

describe('D-FINE export, precision and profile', () => {
  let io: DfineIo;
  let model: LibreYOLOModel;
  let ref: Results;
  let exported: string;
  const dir = mkdtempSync(join(tmpdir(), 'ly-dfine-export-'));

  before(async () => {
    io = readDfineIo();
    model = await LibreYOLO(fixture('dfinen_ref.pt'), { progress: false, threads: 2, warn: () => undefined });
    ref = await model.predict(PHOTO, { conf: 0.5 }) as Results;
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('exports the original layout (images -> pred_logits, pred_boxes; opset 17; dynamic batch) with its metadata', async () => {
    exported = await model.export({ format: 'onnx', dynamic: true, output_path: join(dir, 'dfinen.onnx') });
    const s = summarizeModel(new Uint8Array(readFileSync(exported)));
    assert.deepEqual(s.inputs.map((v) => [v.name, v.dtype, v.shape]), [['images', 'float32', ['batch', 3, 640, 640]]]);
    assert.deepEqual(s.outputs.map((v) => [v.name, v.dtype, v.shape]), [['pred_logits', 'float32', ['batch', 300, 80]], ['pred_boxes', 'float32', ['batch', 300, 4]]]);
    assert.ok(s.opset >= 17, `opset ${s.opset}`);
    for (const [k, v] of [['model_family', 'dfine'], ['size', 'n'], ['nc', '80'], ['imgsz', '640'], ['dynamic', 'True'], ['precision', 'fp32'], ['half', 'False']]) assert.equal(s.metadata.get(k!), v, k);
    await assert.rejects(model.export({ format: 'onnx', opset: 16, output_path: join(dir, 'o16.onnx') }), /opset must be >= 17 for dfine models, got 16/);
  });

  it('LibreYOLO() reloads the export as D-FINE: the fixture at batch 1 and 2 within the 2x-floor limits, the photo\'s detections as a set', async () => {
    const m = await LibreYOLO(exported, { threads: 2 });
    try {
      assert.deepEqual([m.family.name, m.size, m.nc, m.names[0]], ['dfine', 'n', 80, 'person']);
      await assertFixtureParity(m, io, 'reloaded export');
      assertPhotoDetections(await m.predict(PHOTO, { conf: 0.5 }) as Results, io);
    } finally {
      await m.close();
    }
  });

  it('without metadata the export is still recognised as D-FINE by its output pair (with a warning)', async () => {
    const graph = deserializeModel(new Uint8Array(readFileSync(exported)));
    graph.metadata = new Map();
    const bare = join(dir, 'bare.onnx');
    writeFileSync(bare, serializeModel(graph, { opset: 17 }));
    const warnings: string[] = [];
    const m = await LibreYOLO(bare, { threads: 2, warn: (w) => warnings.push(w) });
    try {
      assert.deepEqual([m.family.name, m.nc], ['dfine', 80]);
      assert.match(warnings.join('\n'), /has no LibreYOLO metadata; assuming a dfine-style detector with 80 classes/);
      await assertFixtureParity(m, io, 'metadata-less export');
    } finally {
      await m.close();
    }
  });

  it('the original\'s own export (dfinen_ref.onnx, batch 1 only) loads as D-FINE and gives the photo\'s detections', async () => {
    const m = await LibreYOLO(fixture('dfinen_ref.onnx'), { threads: 2 });
    try {
      assert.deepEqual([m.family.name, m.size, m.nc], ['dfine', 'n', 80]);
      // Its float32 export differs from the eval outputs by up to 2.8e-4 in logits (dfine.md 5).
      assertPhotoDetections(await m.predict(PHOTO, { conf: 0.5 }) as Results, io, 1e-3);
    } finally {
      await m.close();
    }
  });

  it('a static batch-2 export runs both stored images (the original\'s export runs at batch 1 only)', async () => {
    const path = await model.export({ format: 'onnx', batch: 2, output_path: join(dir, 'b2.onnx') });
    assert.deepEqual(summarizeModel(new Uint8Array(readFileSync(path))).inputs[0]!.shape, [2, 3, 640, 640]);
    const m = await LibreYOLO(path, { threads: 2 });
    try {
      const { box, score } = predictLayoutErrors(await m.forward(inputOf(io, '2x3x640x640')), io, '2x3x640x640');
      const lim = limitsOf(io);
      assert.ok(box <= lim.box && score <= lim.score, `box ${box}, score ${score}`);
    } finally {
      await m.close();
    }
  });

  it('the predict graph folds the 30 LearnableAffineBlocks of the backbone into their convolutions (Conv + Clip)', () => {
    const g = buildInferenceGraph(model.network!, { batch: 1, height: 640, width: 640 });
    assert.deepEqual(g.nodes.filter((n) => n.name.includes('/lab/')).map((n) => n.name), []);
    assert.equal(g.nodes.filter((n) => n.op === 'Clip' && n.name.startsWith('/backbone/')).length, 30);
  });

  it('the keep-float list: proposal selection and box arithmetic stay float32 under fp16, the decoder layers go half', () => {
    const g = buildInferenceGraph(model.network!, { batch: 1, height: 640, width: 640 });
    const summary = convertPrecision(g, { dtype: 'float16', keepIO: true, region: keepFloatRegion(model.family.quantize!.keepFloat)! });
    assert.ok(summary.halfNodes > 400, `${summary.halfNodes} nodes in half`);
    const types = inferDtypes(g);
    const outTypes = (re: RegExp): Set<string> => new Set(g.nodes.filter((n) => re.test(n.name) && n.outputs[0] && types.get(n.outputs[0])?.startsWith('float')).map((n) => types.get(n.outputs[0]!)!));
    for (const re of [/^\/decoder\/enc_score_head\/MatMul/, /^\/decoder\/TopK/, /^\/decoder\/decoder\/distance2bbox\//, /^\/decode\//]) assert.deepEqual(outTypes(re), new Set(['float32']), String(re));
    assert.ok(outTypes(/^\/decoder\/decoder\/layers\/0\/ffn\/linear1\//).has('float16'), 'the decoder FFN runs in half');
    assert.ok(outTypes(/^\/backbone\//).has('float16'), 'the backbone runs in half');
  });

  it('export half: float16 input and outputs; LibreYOLO() reloads it and finds the fp32 detections', async () => {
    const path = await model.export({ format: 'onnx', half: true, dynamic: true, output_path: join(dir, 'dfinen_fp16.onnx') });
    const s = summarizeModel(new Uint8Array(readFileSync(path)));
    assert.equal(s.inputs[0]!.dtype, 'float16');
    assert.equal(s.metadata.get('precision'), 'fp16');
    const half = await LibreYOLO(path, { threads: 2 });
    try {
      assert.deepEqual([half.family.name, half.precision], ['dfine', 'fp16']);
      const r = await half.predict(PHOTO, { conf: 0.5 }) as Results;
      // Random fixture weights: the proposal top-k has near ties, so a half backbone re-ranks
      // proposals; measured 0.93 of the fp32 detections recovered.
      assert.ok(recall(r, ref) >= 0.85, `fp16 export recall ${recall(r, ref)}`);
    } finally {
      await half.close();
    }
  });

  for (const recipe of ['fp16', 'bf16'] as const) {
    it(`quantize ${recipe}: float32 IO, finds the fp32 detections; dequantize restores them exactly`, async () => {
      const m = await LibreYOLO(fixture('dfinen_ref.pt'), { progress: false, threads: 2, warn: () => undefined });
      try {
        await m.quantize({ recipe });
        assert.equal(m.precision, recipe);
        const q = await m.predict(PHOTO, { conf: 0.5 }) as Results;
        // bf16 keeps 8 mantissa bits of every weight: measured 0.45 (fp16 0.93) on these random weights.
        const floor = recipe === 'fp16' ? 0.85 : 0.4;
        assert.ok(recall(q, ref) >= floor, `${recipe} recall ${recall(q, ref)}`);
        await m.dequantize();
        assert.deepEqual((await m.predict(PHOTO, { conf: 0.5 }) as Results).boxes.data, ref.boxes.data);
      } finally {
        await m.close();
      }
    });
  }

  it('profile infer: D-FINE-n at 640, every kernel categorised, its 6 GridSamples, 2 TopKs and 12 LayerNormalizations once per step', async () => {
    const r = await cli('profile', 'infer', PHOTO, '--device', 'cpu', '--warmup', '1', '--runs', '2',
      '--weights', fixture('dfinen_ref.pt'), '--project', join(dir, 'p'));
    assert.equal(r.code, 0, r.stderr);
    const a = JSON.parse(readFileSync(join(dir, 'p', 'infer', 'profile.json'), 'utf8')) as ProfileAnalysis & { config: { imgsz: number } };
    assert.equal(a.config.imgsz, 640);
    const cats = a.categories as Array<{ name: string; pct: number }>;
    assert.equal(cats[0]!.name, 'gemm / conv');
    assert.ok(!cats.some((c) => c.name === 'other' && c.pct > 1), `uncategorised kernels: ${JSON.stringify(cats)}`);
    const perStep = (kernel: string): number | undefined => (a.kernels as Array<{ kernel: string; count_per_step: number }>).find((k) => k.kernel === kernel)?.count_per_step;
    assert.equal(perStep('GridSample'), 6, '3 decoder layers x 2 levels');
    assert.equal(perStep('TopK'), 2, 'query selection and the last layer\'s LQE');
    // The family's session config keeps the 12 LayerNormalizations unfused (SkipLayerNormalization is slower here).
    assert.equal(perStep('LayerNormalization'), 12);
    assert.equal(perStep('SkipLayerNormalization'), undefined);
  });
});

