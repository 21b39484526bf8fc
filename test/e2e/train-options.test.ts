/**
 * Training options of the original that are implemented or refused here, never accepted and ignored:
 * `data_dir` names a YOLO-layout folder as the dataset (as the original reads it without `data`);
 * `allow_download_scripts=true`, `freeze`, `cache`, `callbacks` and `loggers` are refused with what
 * to do; `sync_bn` warns that it is a no-op on one device, as it is in the original
 * (test/e2e/cli-newcomer.test.ts checks that line through the CLI).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { LibreYOLOError } from '../../src/errors.ts';
import { createFreshModel } from '../../src/load.ts';
import { resolveTrainConfig } from '../../src/train/config.ts';
import { readTrainingCheckpoint } from '../../src/train/checkpoint.ts';
import { runCli } from '../helpers/cli.ts';

const quiet = (): void => undefined;
const refused = (code: string, message: RegExp) => (e: unknown): boolean => {
  assert.ok(e instanceof LibreYOLOError, String(e));
  assert.equal(e.code, code);
  assert.match(e.message, message);
  return true;
};

describe('training options: implemented or refused', () => {
  let tmp = '';
  let root = '';

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'libreyolo-train-options-'));
    root = join(tmp, 'circles');
    await generateSynthDataset({ out: root, seed: 4, train: 4, val: 2, imgsz: 64, classes: ['circle'], square: true });
  });

  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('refuses allow_download_scripts=true, freeze, cache, callbacks and loggers, and accepts their defaults', () => {
    const data = { data: 'x.yaml' };
    assert.throws(() => resolveTrainConfig({ ...data, allow_download_scripts: true }, quiet),
      refused('config_unsupported', /^train: allow_download_scripts=true is not supported: this package never runs a dataset YAML's Python download script\. Download and unzip the dataset yourself/));
    assert.throws(() => resolveTrainConfig({ ...data, freeze: 10 }, quiet), refused('config_unsupported', /^train: freeze is not supported: this package trains every layer\. Remove freeze\.$/));
    assert.throws(() => resolveTrainConfig({ ...data, freeze: '[0, 1]' }, quiet), refused('config_unsupported', /freeze is not supported/));
    for (const cache of [true, 'ram', 'disk', 'true']) {
      assert.throws(() => resolveTrainConfig({ ...data, cache }, quiet), refused('config_unsupported', /^train: cache is not supported: images are decoded every epoch/), String(cache));
    }
    for (const key of ['callbacks', 'loggers']) {
      assert.throws(() => resolveTrainConfig({ ...data, [key]: [] }, quiet), refused('config_unsupported', new RegExp(`^train: '${key}' is not supported`)), key);
    }
    const warnings: string[] = [];
    const cfg = resolveTrainConfig({ ...data, allow_download_scripts: false, freeze: null, cache: false }, (m) => warnings.push(m));
    assert.deepEqual([cfg.allow_download_scripts, cfg.freeze, cfg.cache], [false, null, false]);
    assert.deepEqual(warnings, []);
  });

  it('the CLI exits 2 on a refused option before the dataset is read', async () => {
    const r = await runCli(['train', 'data=never-read.yaml', 'model=yolo9t', 'allow_download_scripts=true'], tmp);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^Error: train: allow_download_scripts=true is not supported/m);
  });

  it('data_dir: refused together with data, for a missing folder and for a COCO-JSON folder', async () => {
    assert.throws(() => resolveTrainConfig({ data: 'x.yaml', data_dir: root }, quiet), refused('config_conflict', /^train: pass data or data_dir, not both/));
    assert.throws(() => resolveTrainConfig({}, quiet), refused('config_required_key', /data is required/));
    assert.equal(resolveTrainConfig({ data_dir: root }, quiet).data, '');
    const model = createFreshModel('yolo9t', { nc: 1 });
    try {
      await assert.rejects(model.train({ data_dir: join(tmp, 'nowhere'), epochs: 1, verbose: false }), refused('data_not_found', /data_dir .*nowhere is not a folder/));
      const coco = join(tmp, 'coco');
      mkdirSync(join(coco, 'annotations'), { recursive: true });
      await assert.rejects(model.train({ data_dir: coco, epochs: 1, verbose: false }), refused('config_unsupported', /has an annotations\/ folder \(COCO JSON\), which this package does not read/));
      const empty = join(tmp, 'empty');
      mkdirSync(join(empty, 'images', 'train'), { recursive: true });
      await assert.rejects(model.train({ data_dir: empty, epochs: 1, verbose: false }), /empty.images.train/);
    } finally {
      await model.close();
    }
  });

  it('data_dir trains on images/train and validates on images/val of the folder, with the model\'s classes', async () => {
    const model = createFreshModel('yolo9t', { nc: 1 });
    const names = { ...model.names };
    try {
      const r = await model.train({
        data_dir: root, epochs: 1, batch: 2, imgsz: 64, workers: 0, seed: 0, eval_interval: 1, project: join(tmp, 'runs'), name: 'dd', verbose: false,
      });
      assert.equal(r.epoch_losses.length, 1);
      assert.ok(Number.isFinite(r.epoch_losses[0]));
      assert.equal(r.epoch_metrics.length, 1, 'images/val was found and validated');
      assert.ok(r.val_metrics !== null);
      const ckpt = await readTrainingCheckpoint(r.last_checkpoint!);
      assert.equal(ckpt.config.data_dir, root);
      assert.equal(ckpt.config.data, '');
      assert.deepEqual(model.names, names, 'the classes are the model\'s');
    } finally {
      await model.close();
    }
  });
});
