/**
 * Two details of the original's trainer that D-FINE's recipe exposes, checked on a real run (a
 * YOLOv9-t registered as a family whose parameter groups carry LR multipliers, as D-FINE's do, on
 * the 8-image circles set at 64 px, one optimizer step per epoch):
 * - the first step of a run takes the schedule's lr(0) in every group, without the multipliers
 *   (the original's _initialize_scheduler_lr; D-FINE's backbone groups get 1e-6, not 5e-7), and
 *   every later step lr(k) x multiplier. AdamW's first update is lr * g / (|g| + eps), so each
 *   weight moves by lr(0) exactly, whatever its gradient;
 * - from the no-aug epoch on, `ema_restart_decay` replaces the ramped EMA decay by a constant
 *   (D-FINE's EMA restart, its default 0.9999): the update of epoch 2 is read back from the saved
 *   raw and EMA weights of epochs 1 and 2.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { createFreshModel } from '../../src/load.ts';
import { dfineFamily } from '../../src/models/dfine/family.ts';
import { trainingHooks, type TrainingHooks } from '../../src/models/registry.ts';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import { readTrainingCheckpoint } from '../../src/train/checkpoint.ts';
import { resolveTrainConfig } from '../../src/train/config.ts';
import { multiScaleSampler } from '../../src/train/multi-scale.ts';
import { trainModel } from '../../src/train/trainer.ts';
import { circlesDataset } from '../helpers/train-e2e.ts';
import { registerTestFamily } from '../helpers/test-families.ts';

const LR0 = 0.01, LR_START = 1e-3, BIAS_MULT = 0.5, RESTART = 0.9;

const yoloHooks: TrainingHooks = trainingHooks(yolo9Family);
registerTestFamily('lrgroups', {}, {
  train: {
    ...yoloHooks,
    // Biases at half the LR, everything else at the LR; no decay anywhere (the update is then lr * sign(g)).
    paramGroups: (keys) => [
      { name: 'weights', keys: keys.filter((k) => !k.includes('bias')), weightDecay: 0, lrMult: 1 },
      { name: 'biases', keys: keys.filter((k) => k.includes('bias')), weightDecay: 0, lrMult: BIAS_MULT },
    ],
  },
});

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const floats = (t: HostTensor | undefined): Float32Array => t!.data as Float32Array;
const isParam = (k: string): boolean => (k.endsWith('.weight') || k.endsWith('.bias')) && !k.includes('running');

describe('trainer: the first step\'s LR and the EMA restart, as the original', () => {
  let tmp = '';
  let initial: Map<string, HostTensor>;
  let epoch1: Awaited<ReturnType<typeof readTrainingCheckpoint>>;
  let epoch2: Awaited<ReturnType<typeof readTrainingCheckpoint>>;
  let csv: string[];

  before(async () => {
    const ds = await circlesDataset('libreyolo-recipe-', 64);
    tmp = ds.tmp;
    const model = createFreshModel('lrgroupst', { nc: 1 });
    initial = new Map([...model.network!.namedTensors()].map(([k, p]) => [k, { ...p.value, data: p.value.data.slice() }]));
    try {
      const results = await trainModel(model, {
        data: ds.yaml, imgsz: 64, batch: 8, epochs: 2, workers: 1, seed: 0, project: join(tmp, 'runs'), name: 'recipe', verbose: false,
        optimizer: 'adamw', lr0: LR0, weight_decay: 0, warmup_epochs: 1, warmup_lr_start: LR_START, no_aug_epochs: 1,
        ema: true, ema_restart_decay: RESTART, save_period: 1, amp: false,
      }, { warn: () => undefined });
      const weights = join(results.save_dir!, 'weights');
      epoch1 = await readTrainingCheckpoint(join(weights, 'epoch_1.pt'));
      epoch2 = await readTrainingCheckpoint(join(weights, 'epoch_2.pt'));
      csv = readFileSync(join(results.save_dir!, 'results.csv'), 'utf8').trim().split('\n');
    } finally {
      await model.close();
    }
  });
  after(() => { if (tmp) rmSync(tmp, { recursive: true, force: true }); });

  it('step 0 moves every weight by lr(0) = warmup_lr_start in every group, multipliers not applied', () => {
    const moves: Record<'weights' | 'biases', number[]> = { weights: [], biases: [] };
    for (const [k, t0] of initial) {
      if (!isParam(k)) continue;
      const p1 = floats(epoch1.trainModel.get(k));
      const p0 = floats(t0);
      assert.equal(p1.length, p0.length, `${k} kept its shape`);
      const group = k.includes('bias') ? moves.biases : moves.weights;
      for (let i = 0; i < p0.length; i++) if (p1[i] !== p0[i]) group.push(Math.abs(p1[i]! - p0[i]!) / LR_START);
    }
    assert.ok(moves.weights.length > 1000 && moves.biases.length > 100, `${moves.weights.length} weights and ${moves.biases.length} biases moved`);
    const [w, b] = [median(moves.weights), median(moves.biases)];
    console.log(`# step 0: median |dp| / lr(0): weights ${w.toFixed(4)}, biases ${b.toFixed(4)} (x${BIAS_MULT} group)`);
    assert.ok(Math.abs(w - 1) < 0.01, `weights moved ${w} x lr(0)`);
    assert.ok(Math.abs(b - 1) < 0.01, `biases moved ${b} x lr(0): the first step must not apply the group multiplier ${BIAS_MULT}`);
  });

  it('after each step the groups get lr(k) x multiplier (results.csv after epoch 1: lr0 and lr0 x 0.5)', () => {
    const head = csv[0]!.split(',');
    const row = csv[1]!.split(',');
    const lr = (g: number): number => Number(row[head.indexOf(`lr/group${g}`)]);
    assert.ok(Math.abs(lr(0) - LR0) < 1e-12, `group 0 lr ${lr(0)}`);
    assert.ok(Math.abs(lr(1) - LR0 * BIAS_MULT) < 1e-12, `group 1 lr ${lr(1)}`);
  });

  it('the no-aug epoch\'s EMA update uses ema_restart_decay as a constant, not the ramp 0.9999 (1 - e^(-2/2000))', () => {
    assert.equal(epoch2.emaUpdates, 2);
    const ds: number[] = [];
    for (const k of initial.keys()) {
      if (!isParam(k)) continue;
      const e1 = floats(epoch1.ema!.get(k)), e2 = floats(epoch2.ema!.get(k)), p2 = floats(epoch2.trainModel.get(k));
      // e2 = d e1 + (1 - d) p2
      for (let i = 0; i < e1.length; i++) if (Math.abs(e1[i]! - p2[i]!) > 1e-3) ds.push((e2[i]! - p2[i]!) / (e1[i]! - p2[i]!));
    }
    assert.ok(ds.length > 1000, `${ds.length} weights to read the decay from`);
    const d = median(ds);
    console.log(`# epoch 2 EMA decay read back: ${d.toFixed(5)} (restart ${RESTART}; the ramp would give ${(0.9999 * (1 - Math.exp(-2 / 2000))).toExponential(3)})`);
    assert.ok(Math.abs(d - RESTART) < 1e-3, `decay ${d}, expected the constant ${RESTART}`);
  });

  it('D-FINE\'s recipe restarts the EMA at 0.9999; other families keep the ramp (null); out of (0, 1) is refused', () => {
    const warn = (): void => undefined;
    assert.equal(resolveTrainConfig({ data: 'x.yaml' }, warn, trainingHooks(dfineFamily).defaults).ema_restart_decay, 0.9999);
    assert.equal(resolveTrainConfig({ data: 'x.yaml' }, warn, yoloHooks.defaults).ema_restart_decay, null);
    assert.equal(resolveTrainConfig({ data: 'x.yaml', ema_restart_decay: 'None' }, warn, trainingHooks(dfineFamily).defaults).ema_restart_decay, null);
    assert.throws(() => resolveTrainConfig({ data: 'x.yaml', ema_restart_decay: 1 }, warn), /ema_restart_decay must be in \(0, 1\)/);
  });

  it('multi_scale=true: D-FINE draws from its collate\'s list (480-800 at 640), YOLOv9 refuses it, not ignores it', () => {
    const warn = (): void => undefined;
    const dfine = resolveTrainConfig({ data: 'x.yaml', multi_scale: 'true' }, warn, trainingHooks(dfineFamily).defaults);
    assert.equal(dfine.multi_scale, true);
    const sampler = multiScaleSampler(dfine, dfineFamily, trainingHooks(dfineFamily), dfineFamily.create({ size: 'n' }))!;
    assert.deepEqual(sampler.sizes, [480, 512, 544, 576, 608, 640, 640, 640, 800, 768, 736, 704, 672]);
    assert.throws(() => multiScaleSampler({ ...dfine, imgsz: 320 }, dfineFamily, trainingHooks(dfineFamily), dfineFamily.create({ size: 'n' })),
      (e: Error & { code?: string }) => e.code === 'invalid_imgsz' && /down to 224x224, where D-FINE n has 245 encoder tokens/.test(e.message));
    const yolo = resolveTrainConfig({ data: 'x.yaml', multi_scale: true }, warn, yoloHooks.defaults);
    assert.throws(() => multiScaleSampler(yolo, yolo9Family, yoloHooks, yolo9Family.create({ size: 't' })),
      (e: Error & { code?: string }) => e.code === 'config_unsupported' && /multi_scale=true is not implemented for YOLOv9 training: every batch trains at imgsz/.test(e.message));
    assert.equal(resolveTrainConfig({ data: 'x.yaml', multi_scale: false }, warn, trainingHooks(dfineFamily).defaults).multi_scale, false);
  });
});
