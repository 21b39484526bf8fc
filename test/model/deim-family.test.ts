/**
 * DEIM (the D-FINE network with SiLU decoder MLPs, dfine.md 1.4) through the library: recognised
 * by metadata or file name only (its keys are D-FINE's), its frozen set, the predict session and a
 * reloaded export against deimn_ref_io at both stored shapes within the 2x-floor limits, the
 * photo's detections as a set, the ONNX's 17 Sigmoid+Mul pairs, quantize fp16, `profile infer`,
 * the model line; training through the same seam: `model.lossAndGradients()` on deimn_ref_train
 * (its denoising draws injected) with MAL as the class term and the stem trained at n, and
 * DEIMConfig's recipe (lr0 4e-4, the no-aug / min-lr / stop ratios, backbone LR x 0.5 / 0.5 / 0.1 /
 * 0.05 / 0.01 by size, the AdamW groups of each size).
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LibreYOLO, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { deserializeModel, summarizeModel } from '../../src/graph/onnx.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import type { DfineSize } from '../../src/models/dfine/config.ts';
import { padDenoisingInputs } from '../../src/models/dfine/denoising.ts';
import { DfineDetector } from '../../src/models/dfine/detector.ts';
import { dfineDnSlots } from '../../src/models/dfine/train.ts';
import { DFINE_DN_INPUTS } from '../../src/models/dfine/train-outputs.ts';
import { trainingHooks } from '../../src/models/registry.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { readSafetensors, writeSafetensors } from '../../src/weights/safetensors.ts';
import { recall, relL2 } from '../helpers/compare.ts';
import { contractTargets } from '../helpers/dfine-targets.ts';
import { assertPhotoDetections, DFINE_SHAPES, inputOf, limitsOf, predictLayoutErrors, readDfineIo, type DfineIo } from '../helpers/dfine-fixture.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { cli } from '../helpers/profile-fixtures.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg');

async function assertFixtureParity(m: LibreYOLOModel, io: DfineIo, what: string): Promise<void> {
  const lim = limitsOf(io);
  for (const shape of DFINE_SHAPES) {
    const { box, score, moved } = predictLayoutErrors(await m.forward(inputOf(io, shape)), io, shape);
    console.log(`# ${what} ${shape}: box ${box.toExponential(2)} px (limit ${lim.box.toExponential(2)}), score ${score.toExponential(2)} (limit ${lim.score.toExponential(2)}), ${moved} rows paired elsewhere`);
    assert.ok(box <= lim.box && score <= lim.score, `${what} at ${shape}: box ${box.toExponential(2)} px (limit ${lim.box.toExponential(2)}), score ${score.toExponential(2)} (limit ${lim.score.toExponential(2)})`);
    // Rows trade places only at near-tied proposals.
    assert.ok(moved <= 12, `${what} at ${shape}: ${moved} rows paired with another reference row`);
  }
}

describe('DEIM family', () => {
  let io: DfineIo;
  let model: LibreYOLOModel;
  let ref: Results;
  let exported: string;
  const dir = mkdtempSync(join(tmpdir(), 'ly-deim-'));

  before(async () => {
    io = readDfineIo('deimn_ref');
    model = await LibreYOLO(fixture('deimn_ref.pt'), { progress: false, threads: 2 });
    ref = await model.predict(PHOTO, { conf: 0.5 }) as Results;
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('recognises deimn_ref.pt by its model_family: DEIM n, 80 classes, 640, the parameter count; only up/reg_scale frozen at n', () => {
    assert.deepEqual([model.family.name, model.family.displayName, model.size, model.nc, model.names[0]], ['deim', 'DEIM', 'n', 80, 'person']);
    assert.deepEqual(model.imgsz, [640, 640]);
    assert.equal(model.parameterCount(), 3_782_693);
    // dfine.md 1.3 / 1.4: DEIM n trains its stem (trainable 3,782,691); l and x freeze it as D-FINE.
    assert.deepEqual((model.network as DfineDetector).frozenParameterKeys(), ['decoder.up', 'decoder.reg_scale']);
  });

  it('a bare state dict is DEIM by its file name (LibreDEIMn, deim_hgnetv2_n_...), D-FINE by its own, never by shapes', async () => {
    const ckpt = await loadCheckpointFile(fixture('deimn_ref.pt'));
    const bare = (name: string): string => {
      const p = join(dir, name);
      writeFileSync(p, writeSafetensors(ckpt.stateDict));
      return p;
    };
    for (const [name, family] of [['LibreDEIMn.safetensors', 'deim'], ['deim_hgnetv2_n_coco.safetensors', 'deim'], ['LibreDFINEn.safetensors', 'dfine']] as const) {
      const m = await LibreYOLO(bare(name), { progress: false, threads: 1 });
      try {
        assert.deepEqual([m.family.name, m.size, m.nc], [family, 'n', 80], name);
      } finally {
        await m.close();
      }
    }
    await assert.rejects(LibreYOLO(bare('weights.safetensors'), { progress: false }), /Ambiguous D-FINE\/DEIM checkpoint 'weights\.safetensors'/);
    // The DEIM checkpoint (model_family 'deim') under a D-FINE name is refused, not guessed.
    const misnamed = join(dir, 'LibreDFINEn.pt');
    copyFileSync(fixture('deimn_ref.pt'), misnamed);
    await assert.rejects(LibreYOLO(misnamed, { progress: false }), /LibreDFINEn\.pt: its file name says D-FINE but its model_family metadata says DEIM/);
  });

  for (const shape of DFINE_SHAPES) {
    it(`the predict session reproduces deimn_ref_io at ${shape} within 2x the fp64 floor`, async () => {
      const lim = limitsOf(io);
      const { box, score, moved } = predictLayoutErrors(await model.forward(inputOf(io, shape)), io, shape);
      console.log(`# ${shape}: box ${box.toExponential(2)} px (limit ${lim.box.toExponential(2)}), score ${score.toExponential(2)} (limit ${lim.score.toExponential(2)}), ${moved} rows paired elsewhere`);
      assert.ok(box <= lim.box, `box error ${box.toExponential(2)} px > ${lim.box.toExponential(2)}`);
      assert.ok(score <= lim.score, `score error ${score.toExponential(2)} > ${lim.score.toExponential(2)}`);
      assert.ok(moved <= 12, `${moved} rows paired with another reference row`);
    });
  }

  it('predict(parkour.jpg, conf 0.5) gives the original\'s detections as a set', () => {
    assert.equal(ref.length, (io.tensors.get('image_det_scores')!.dims[0]));
    assertPhotoDetections(ref, io);
  });

  it('exports the original layout with model_family deim and its 17 decoder SiLUs as Sigmoid+Mul where D-FINE has ReLUs', async () => {
    exported = await model.export({ format: 'onnx', dynamic: true, output_path: join(dir, 'deimn.onnx') });
    const bytes = new Uint8Array(readFileSync(exported));
    const s = summarizeModel(bytes);
    assert.deepEqual(s.outputs.map((v) => [v.name, v.shape]), [['pred_logits', ['batch', 300, 80]], ['pred_boxes', ['batch', 300, 4]]]);
    assert.equal(s.metadata.get('model_family'), 'deim');
    const g = deserializeModel(bytes);
    // The backbone's ReLUs fold into Conv + Clip (its LearnableAffineBlocks); none is left in the decoder.
    assert.equal(g.nodes.filter((n) => n.op === 'Relu' && n.name.startsWith('/decoder/')).length, 0);
    // Every decoder SiLU is x * Sigmoid(x).
    const silus = g.nodes.filter((n) => n.op === 'Mul' && n.name.startsWith('/decoder/') && n.inputs.some((i) => g.nodes.some((p) => p.op === 'Sigmoid' && p.outputs[0] === i && p.inputs[0] === n.inputs[0])));
    assert.equal(silus.length, 17);
  });

  it('LibreYOLO() reloads the export as DEIM: deimn_ref_io at batch 1 and 2 within the limits, the photo\'s detections', async () => {
    const m = await LibreYOLO(exported, { threads: 2 });
    try {
      assert.deepEqual([m.family.name, m.size, m.nc], ['deim', 'n', 80]);
      await assertFixtureParity(m, io, 'reloaded export');
      assertPhotoDetections(await m.predict(PHOTO, { conf: 0.5 }) as Results, io);
    } finally {
      await m.close();
    }
  });

  it('quantize fp16 runs on DEIM and finds the fp32 detections', async () => {
    const m = await LibreYOLO(fixture('deimn_ref.pt'), { progress: false, threads: 2, warn: () => undefined });
    try {
      await m.quantize({ recipe: 'fp16' });
      assert.equal(m.precision, 'fp16');
      const q = await m.predict(PHOTO, { conf: 0.5 }) as Results;
      console.log(`# fp16 recall ${recall(q, ref).toFixed(3)} of ${ref.length}`);
      // Random fixture weights with near-tied proposals (as D-FINE's 0.85 floor).
      assert.ok(recall(q, ref) >= 0.85, `fp16 recall ${recall(q, ref)}`);
    } finally {
      await m.close();
    }
  });

  it('profile infer and predict name DEIM', async () => {
    const copy = join(dir, 'my-deim.pt');
    copyFileSync(fixture('deimn_ref.pt'), copy);
    const p = await cli('predict', `model=${copy}`, `source=${PHOTO}`, 'conf=0.5');
    assert.equal(p.code, 0, p.stderr);
    assert.match(p.stdout.split('\n')[0]!, /^Model: deim-n \(DEIM n, 80 classes, 3,782,693 parameters\) from .*my-deim\.pt/);
    const r = await cli('profile', 'infer', PHOTO, '--device', 'cpu', '--warmup', '1', '--runs', '1', '--weights', copy, '--project', join(dir, 'p'));
    assert.equal(r.code, 0, r.stderr);
    const a = JSON.parse(readFileSync(join(dir, 'p', 'infer', 'profile.json'), 'utf8')) as { kernels: Array<{ kernel: string; count_per_step: number }> };
    assert.equal(a.kernels.find((k) => k.kernel === 'GridSample')?.count_per_step, 6, '3 decoder layers x 2 levels');
  });

  it('model.lossAndGradients() on deimn_ref_train: loss_total and each logged family (mal, bbox, giou, fgl, ddf) within 1e-4, the stem\'s gradients', async () => {
    const train = readSafetensors(new Uint8Array(readFileSync(fixture('deimn_ref_train.safetensors'))), 'deim train fixture').tensors;
    const u8 = train.get('input_u8_2x3x640x640')!;
    const images = { data: Float32Array.from(u8.data as Uint8Array, (v) => Math.fround(v / 255)), dims: [...u8.dims] };
    const stored: Record<string, HostTensor> = {};
    for (const name of Object.values(DFINE_DN_INPUTS)) stored[name] = train.get(name)!;
    const draws = padDenoisingInputs(stored, 3, 33, dfineDnSlots(4), 80);
    const ours = await model.lossAndGradients(images, contractTargets(train.get('targets_2x4x5')!, 640), { draws, threads: 2 });
    const total = (train.get('loss_total')!.data as Float32Array)[0]!;
    assert.ok(Math.abs(ours.loss.total - total) <= 1e-4 * total, `total ${ours.loss.total} vs ${total}`);
    assert.deepEqual(Object.keys(ours.loss).filter((k) => k !== 'total'), ['mal', 'bbox', 'giou', 'fgl', 'ddf']);
    for (const name of ['mal', 'bbox', 'giou', 'fgl', 'ddf']) {
      const want = [...train].filter(([k]) => k === `loss.loss_${name}` || k.startsWith(`loss.loss_${name}_`)).reduce((a, [, t]) => a + (t.data as Float32Array)[0]!, 0);
      assert.ok(Math.abs(ours.loss[name]! - want) <= 1e-4 * want, `${name}: ${ours.loss[name]} vs ${want}`);
    }
    // DEIM n trains its stem (freeze_at -1): the stem conv's gradient as the reference's within the
    // first backbone block's bound (deim-train-gradients.test.ts has every stored gradient).
    const key = 'backbone.stem.stem1.conv.weight';
    assert.ok(ours.gradients[key], 'the stem has a gradient');
    const rel = relL2(ours.gradients[key]!.data, train.get(`grad.${key}`)!.data as Float32Array);
    assert.ok(rel <= 1e-2, `${key}: relative L2 ${rel.toExponential(2)}`);
    assert.equal(ours.gradients['decoder.up'], undefined);
  });

  it('DEIMConfig\'s recipe: lr0 4e-4, no-aug 12, min-lr 0.5, stop ratio 0.91, deim_exp; backbone LR by size, the AdamW groups of n and l', () => {
    const hooks = trainingHooks(model.family);
    assert.deepEqual(hooks.lossNames, ['mal', 'bbox', 'giou', 'fgl', 'ddf']);
    const d = hooks.defaults;
    assert.deepEqual([d.lr0, d.no_aug_epochs, d.min_lr_ratio, d.aug_stop_epoch_ratio, d.name, d.epochs, d.clip_max_norm, d.ema_decay],
      [4e-4, 12, 0.5, 0.91, 'deim_exp', 132, 0.1, 0.9999]);
    const groupsOf = (size: DfineSize) => {
      const net = new DfineDetector({ size, nc: 80, variant: 'deim' });
      const trainable = [...net.namedTensors()].filter(([, p]) => p.kind === 'parameter' && p.requiresGrad).map(([k]) => k);
      const groups = hooks.paramGroups!(trainable, { weightDecay: 1e-4, lr0: 4e-4 }, net);
      assert.equal(groups.reduce((a, g) => a + g.keys.length, 0), trainable.length, `${size}: every trainable key in one group`);
      return groups;
    };
    // n: the trained stem is backbone (lab.scale without decay), LR x 0.5.
    const n = groupsOf('n');
    assert.deepEqual(n.map((g) => [g.name, g.weightDecay, g.lrMult]), [['head_wd', 1e-4, 1], ['head_no_wd', 0, 1], ['backbone_wd', 1e-4, 0.5], ['backbone_no_wd', 0, 0.5]]);
    assert.ok(n[2]!.keys.includes('backbone.stem.stem1.conv.weight') && n[3]!.keys.includes('backbone.stem.stem1.lab.scale'));
    assert.deepEqual((['s', 'm', 'x'] as const).map((s) => groupsOf(s).find((g) => g.name === 'backbone_wd')!.lrMult), [0.5, 0.1, 0.01]);
    // l: frozen stem, FrozenBatchNorm2d and no LearnableAffineBlocks leave the backbone nothing without decay.
    const l = groupsOf('l');
    assert.deepEqual(l.map((g) => [g.name, g.weightDecay, g.lrMult]), [['head_wd', 1e-4, 1], ['head_no_wd', 0, 1], ['backbone_wd', 1e-4, 0.05]]);
    assert.ok(!l[2]!.keys.some((k) => k.startsWith('backbone.stem.')), 'the l stem is frozen');
  });
});
