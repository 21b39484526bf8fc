/**
 * Training checkpoints, run artifacts and the train config: a checkpoint in the original's layout
 * that LibreYOLO() loads and a resumed run reads back; results.csv columns and Python-style values;
 * config defaults, aliases and errors.
 */
import assert from 'node:assert/strict';
import { unzipSync } from 'fflate';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { describe, it } from 'node:test';
import { LibreYOLO } from '../../src/index.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import { makeRunDir, pyNumber, ResultsCsv, writeYaml } from '../../src/train/artifacts.ts';
import { readTrainingCheckpoint, saveTrainingCheckpoint } from '../../src/train/checkpoint.ts';
import { accumulateSteps, isFloatField, resolveTrainConfig, TRAIN_DEFAULTS } from '../../src/train/config.ts';
import { ModelEMA } from '../../src/train/ema.ts';
import { Optimizer } from '../../src/train/optimizer.ts';
import { readTorchCheckpoint } from '../../src/weights/torch-checkpoint.ts';
import type { PyValue } from '../../src/weights/pickle/index.ts';
import { tempDir } from '../helpers/temp.ts';

const tmp = tempDir();

describe('training checkpoint', () => {
  it('has the original keys, loads with LibreYOLO() (EMA weights) and resumes (raw weights, optimizer, EMA)', async () => {
    const net = yolo9Family.create({ size: 't', nc: 3 });
    const named = [...net.namedTensors()];
    const opt = Optimizer.create(named, { lr0: 0.01 });
    const ema = new ModelEMA(named);
    const grads = new Map<string, Float32Array>();
    for (const [k, p] of named) if (p.kind === 'parameter') grads.set(k, Float32Array.from(p.value.data as Float32Array, (_, i) => Math.sin(i) * 1e-2));
    opt.step(grads);
    ema.update(named);
    const sd = new Map<string, HostTensor>(named.map(([k, p]) => [k, p.value]));
    const path = join(tmp, 'last.pt');
    const names = { 0: 'circle', 1: 'square', 2: 'triangle' };
    await saveTrainingCheckpoint(path, {
      model: ema.state, trainModel: sd, emaUpdates: ema.updates, epoch: 4, optimizer: opt.stateDict(),
      config: { ...TRAIN_DEFAULTS, data: 'synth.yaml' }, loss: 3.25,
      best: { mAP50_95: 0.125, mAP50: 0.5, epoch: 3, validated: true },
      family: 'yolo9', size: 't', nc: 3, names, imgsz: 160,
    });

    // Whole-number floats stay floats, as the original writes them (mosaic_prob 1.0, weight_decay 0.0).
    const pkl = Object.entries(unzipSync(readFileSync(path))).find(([n]) => n.endsWith('/data.pkl'))![1];
    const afterKey = (key: string): string => {
      const k = Buffer.from(key);
      const at = Buffer.from(pkl).indexOf(Buffer.concat([Buffer.from([0x58, k.length, 0, 0, 0]), k]));
      assert.ok(at >= 0, `key ${key} in data.pkl`);
      let p = at + 5 + k.length;
      while (pkl[p] === 0x71 || pkl[p] === 0x72) p += pkl[p] === 0x71 ? 2 : 5; // memo puts
      return Buffer.from(pkl.subarray(p, p + 9)).toString('hex');
    };
    assert.equal(afterKey('mosaic_prob'), '473ff0000000000000');
    assert.equal(afterKey('weight_decay').slice(0, 2), '47');
    assert.match(afterKey('epochs'), /^4[abd]/); // ints stay ints (BININT, BININT1, BININT2)

    const top = readTorchCheckpoint(readFileSync(path), path) as Map<string, PyValue>;
    assert.deepEqual([...top.keys()], [
      'model', 'schema_version', 'libreyolo_version', 'model_family', 'size', 'task', 'nc', 'names', 'imgsz',
      'epoch', 'optimizer', 'config', 'loss', 'best_mAP50_95', 'best_mAP50', 'best_metric_key', 'best_metric_value',
      'best_epoch', 'is_ema_weights', 'best_metric', 'best_metric_name', 'train_model', 'ema', 'ema_updates',
    ]);
    assert.equal(top.get('schema_version'), '1.0');
    assert.equal(top.get('best_metric_key'), 'metrics/mAP50-95');
    assert.equal(top.get('is_ema_weights'), true);
    assert.equal((top.get('model') as Map<string, unknown>).size, 1338);
    assert.equal((top.get('names') as Map<number, string>).get(2), 'triangle');
    assert.equal(((top.get('config') as Map<string, PyValue>).get('data')), 'synth.yaml');

    const model = await LibreYOLO(path);
    try {
      assert.equal(model.nc, 3);
      assert.equal(model.size, 't');
      assert.deepEqual(model.names, names);
      assert.deepEqual(model.imgsz, [160, 160]);
      // LibreYOLO() picks the EMA weights (the top-level model)
      const key = 'backbone.conv0.conv.weight';
      const loaded = [...model.network!.namedTensors()].find(([k]) => k === key)![1].value.data as Float32Array;
      assert.deepEqual(loaded, ema.state.get(key)!.data);
    } finally {
      await model.close();
    }

    const r = await readTrainingCheckpoint(path);
    assert.equal(r.epoch, 4);
    assert.equal(r.emaUpdates, 1);
    assert.deepEqual(r.best, { mAP50_95: 0.125, mAP50: 0.5, epoch: 3, validated: true });
    assert.equal(r.config.data, 'synth.yaml');
    assert.deepEqual(r.config.mosaic_scale, [0.5, 1.5]);
    for (const [k, p] of named) assert.deepEqual(r.trainModel.get(k)!.data, p.value.data, k);
    for (const [k, t] of ema.state) assert.deepEqual(r.ema!.get(k)!.data, t.data, k);
    // The resumed optimizer carries on exactly: a fresh network given the checkpoint's raw weights and
    // the restored optimizer state takes the same next step as the run that wrote it.
    const named2 = [...yolo9Family.create({ size: 't', nc: 3 }).namedTensors()];
    for (const [k, p] of named2) p.value = { ...p.value, data: r.trainModel.get(k)!.data.slice() };
    const opt2 = Optimizer.create(named2, { lr0: 0.01 });
    opt2.loadStateDict(r.optimizer);
    assert.deepEqual(opt2.lrs, opt.lrs);
    opt.step(grads);
    opt2.step(grads);
    const after1 = new Map(named.map(([k, p]) => [k, p.value.data]));
    let moved = 0;
    for (const [k, p] of named2) {
      assert.deepEqual(p.value.data, after1.get(k), `${k} after the resumed step`);
      if (p.kind === 'parameter') moved++;
    }
    assert.ok(moved > 100);
    // Without the state (no momentum buffers) the same step lands elsewhere: the check above can fail.
    const named3 = [...yolo9Family.create({ size: 't', nc: 3 }).namedTensors()];
    for (const [k, p] of named3) p.value = { ...p.value, data: r.trainModel.get(k)!.data.slice() };
    Optimizer.create(named3, { lr0: 0.01 }).step(grads);
    const key = 'backbone.conv0.conv.weight';
    assert.notDeepEqual(named3.find(([k]) => k === key)![1].value.data, after1.get(key));
  });

  it('a weights-only checkpoint cannot be resumed', async () => {
    const net = yolo9Family.create({ size: 't', nc: 2 });
    const path = join(tmp, 'plain.pt');
    const { saveCheckpointPt } = await import('../../src/weights/checkpoint.ts');
    await saveCheckpointPt(path, new Map([...net.namedTensors()].map(([k, p]) => [k, p.value])), { model_family: 'yolo9', size: 't', nc: 2 });
    await assert.rejects(readTrainingCheckpoint(path), /not a training checkpoint/);
    await assert.rejects(readTrainingCheckpoint(join(tmp, 'nope.pt')), /not found/);
  });
});

describe('run artifacts', () => {
  it('numbers run directories name, name2, name3', async () => {
    const project = join(tmp, 'runs');
    const a = await makeRunDir(project, 'exp', false);
    const b = await makeRunDir(project, 'exp', false);
    const c = await makeRunDir(project, 'exp', true);
    assert.deepEqual([basename(a), basename(b), basename(c)], ['exp', 'exp2', 'exp']);
  });

  it('writes Python-style values and appends new columns', async () => {
    assert.deepEqual([1, 0.5, 1e-5, 0.0001, 123456.5, 1e16, -2].map(pyNumber), ['1.0', '0.5', '1e-05', '0.0001', '123456.5', '1e+16', '-2.0']);
    await mkdir(join(tmp, 'csv'), { recursive: true });
    const csv = new ResultsCsv(join(tmp, 'csv', 'results.csv'));
    await csv.append({ epoch: 1, time: 1.5, 'train/loss': 2, validated: false, is_best: false, current_metric: null });
    await csv.append({ epoch: 2, time: 3, 'train/loss': 1.75, validated: true, is_best: true, current_metric: 0.25, 'metrics/mAP50': 0.5 });
    assert.equal(readFileSync(csv.path, 'utf8'),
      'epoch,time,train/loss,validated,is_best,current_metric,metrics/mAP50\n1,1.5,2.0,False,False,,\n2,3.0,1.75,True,True,0.25,0.5\n');
    const again = new ResultsCsv(csv.path);
    again.load(readFileSync(csv.path, 'utf8'));
    await again.append({ epoch: 3, time: 4, 'train/loss': 1 });
    assert.equal(readFileSync(csv.path, 'utf8').split('\n')[3], '3,4.0,1.0,,,,');
  });

  it('writes train_config.yaml with float fields as floats', async () => {
    const path = join(tmp, 'train_config.yaml');
    await writeYaml(path, { epochs: 30, warmup_epochs: 3, mosaic_prob: 1, lr0: 0.01, mosaic_scale: [1, 1.5], name: 'x' }, isFloatField);
    assert.equal(readFileSync(path, 'utf8'), 'epochs: 30\nwarmup_epochs: 3.0\nmosaic_prob: 1.0\nlr0: 0.01\nmosaic_scale:\n  - 1.0\n  - 1.5\nname: x\n');
  });
});

describe('train config', () => {
  const quiet = (): void => undefined;
  it('has the original defaults', () => {
    const c = resolveTrainConfig({ data: 'coco8' }, quiet);
    assert.equal(c.epochs, 300);
    assert.equal(c.batch, 16);
    assert.equal(c.workers, 8);
    assert.equal(c.name, 'yolo9_exp');
    assert.equal(c.project, 'runs/train');
    assert.equal(c.eval_interval, 10);
    assert.equal(c.no_aug_epochs, 15);
    assert.equal(c.optimizer, 'sgd');
    assert.equal(c.momentum, 0.937);
    assert.equal(c.weight_decay, 5e-4);
    assert.equal(c.scheduler, 'linear');
    assert.equal(c.amp, true);
  });
  it('coerces CLI strings, accepts camelCase, warns on unknown keys', () => {
    const warnings: string[] = [];
    const c = resolveTrainConfig({ data: 'x.yaml', epochs: '5', amp: 'false', warmupEpochs: 1, optimizer: 'AdamW', bogus: 1 }, (m) => warnings.push(m));
    assert.equal(c.epochs, 5);
    assert.equal(c.amp, false);
    assert.equal(c.warmup_epochs, 1);
    assert.equal(c.optimizer, 'adamw');
    assert.deepEqual(warnings, ["train: unknown argument 'bogus' is ignored."]);
  });
  it('rejects bad values before any work', () => {
    assert.throws(() => resolveTrainConfig({}, quiet), /data is required/);
    assert.throws(() => resolveTrainConfig({ data: 'a', epochs: 0 }, quiet), /epochs must be >= 1/);
    assert.throws(() => resolveTrainConfig({ data: 'a', imgsz: 100 }, quiet), /multiple of 32/);
    assert.throws(() => resolveTrainConfig({ data: 'a', optimizer: 'rmsprop' }, quiet), /optimizer must be/);
    assert.throws(() => resolveTrainConfig({ data: 'a', batch: 'x' }, quiet), /batch must be an integer/);
    assert.throws(() => resolveTrainConfig({ data: 'a', resume: true, pretrained: true }, quiet), /cannot be used together/);
  });
  it('accumulates round(nbs / batch) steps only when nbs exceeds the batch', () => {
    assert.equal(accumulateSteps({ nbs: null, batch: 8 }), 1);
    assert.equal(accumulateSteps({ nbs: 64, batch: 16 }), 4);
    assert.equal(accumulateSteps({ nbs: 8, batch: 16 }), 1);
    assert.equal(accumulateSteps({ nbs: 20, batch: 8 }), 2); // 2.5 rounds to even
    assert.equal(accumulateSteps({ nbs: 28, batch: 8 }), 4); // 3.5 rounds to even
  });
});
