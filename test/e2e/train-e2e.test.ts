/**
 * Training end to end on a tiny synthetic dataset (circles, 96 px): yolo9t from fresh weights for
 * 60 short epochs lowers the loss and writes a best.pt that LibreYOLO() loads and that finds the
 * objects; the run directory has the original's layout and results.csv columns; `libreyolo train
 * resume=<last.pt>` continues the run.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { readTrainingCheckpoint } from '../../src/train/checkpoint.ts';
import type { TrainResults } from '../../src/train/trainer.ts';
import { readTorchCheckpoint } from '../../src/weights/torch-checkpoint.ts';
import { runCli } from '../helpers/cli.ts';
import { recallOnTrainImages, trainOnCircles } from '../helpers/train-e2e.ts';

const IMGSZ = 96;
const EPOCHS = 60;

describe('training end to end', () => {
  let tmp = '';
  let project = '';
  let root = '';
  let results: TrainResults;
  let seconds = 0;

  before(async () => {
    ({ tmp, project, root, results, seconds } = await trainOnCircles('libreyolo-train-e2e-', 'yolo9t', IMGSZ, {
      epochs: EPOCHS, batch: 4, warmup_epochs: 1, no_aug_epochs: EPOCHS, eval_interval: 30,
    }));
  });

  it('lowers the loss', () => {
    const l = results.epoch_losses;
    assert.equal(l.length, EPOCHS);
    const first = l.slice(0, 5).reduce((a, b) => a + b, 0) / 5;
    const last = l.slice(-5).reduce((a, b) => a + b, 0) / 5;
    assert.ok(last < 0.6 * first, `mean loss of the last 5 epochs ${last.toFixed(3)} should be well below the first 5 (${first.toFixed(3)}); ${seconds.toFixed(0)}s`);
    assert.equal(results.epoch_loss_items.length, EPOCHS);
    assert.ok(results.epoch_loss_items.every((x) => x.box > 0 && x.dfl > 0 && x.cls > 0));
  });

  it('writes best.pt that LibreYOLO() loads and that detects the objects', async () => {
    assert.ok(results.best_checkpoint && existsSync(results.best_checkpoint));
    assert.equal(results.epoch_metrics.length, 2);
    assert.ok(results.best_mAP50 > 0.1, `best mAP50 ${results.best_mAP50}`);
    const r = await recallOnTrainImages(results.best_checkpoint, root, IMGSZ, 0.25);
    assert.deepEqual(r.names, { 0: 'circle' });
    assert.deepEqual(r.imgsz, [IMGSZ, IMGSZ]);
    assert.ok(r.total >= 8);
    assert.ok(r.found / r.total >= 0.6, `recall ${r.found}/${r.total} at IoU 0.5, conf 0.25`);
  });

  it('lays out the run directory and results.csv as the original', () => {
    const dir = join(project, 'circles');
    assert.equal(results.save_dir, dir);
    for (const f of ['train_config.yaml', 'results.csv', 'summary.json', 'weights/last.pt', 'weights/best.pt', 'weights/epoch_10.pt', 'weights/epoch_60.pt']) {
      assert.ok(existsSync(join(dir, f)), f);
    }
    const lines = readFileSync(join(dir, 'results.csv'), 'utf8').trim().split('\n');
    assert.equal(lines.length, EPOCHS + 1);
    const header = lines[0]!.split(',');
    assert.deepEqual(header.slice(0, 13), [
      'epoch', 'time', 'train/loss', 'validated', 'is_best', 'current_metric', 'current_metric_name', 'best_metric',
      'best_metric_name', 'best_epoch', 'train/box_loss', 'train/cls_loss', 'train/dfl_loss',
    ]);
    // columns come from the first row; the validation metrics appear once a validation ran
    assert.deepEqual(header.slice(13, 16), ['lr/group0', 'lr/group1', 'lr/group2']);
    for (const m of ['metrics/precision', 'metrics/recall', 'metrics/mAP50-95', 'metrics/mAP50', 'metrics/mAP75', 'metrics/AR100']) assert.ok(header.includes(m), m);
    const row30 = Object.fromEntries(lines[30]!.split(',').map((v, k) => [header[k], v]));
    assert.equal(row30.epoch, '30');
    assert.equal(row30.validated, 'True');
    assert.equal(row30.is_best, 'True');
    assert.equal(row30.current_metric_name, 'metrics/mAP50-95');
    const row1 = Object.fromEntries(lines[1]!.split(',').map((v, k) => [header[k], v]));
    assert.equal(row1.validated, 'False');
    assert.equal(row1.current_metric, '');
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as Record<string, unknown>;
    for (const k of ['final_loss', 'epoch_losses', 'epoch_lrs', 'epoch_loss_items', 'val_metrics', 'epoch_metrics', 'best_mAP50', 'best_mAP50_95', 'best_epoch', 'save_dir', 'best_checkpoint', 'last_checkpoint']) {
      assert.ok(k in summary, k);
    }
    assert.match(readFileSync(join(dir, 'train_config.yaml'), 'utf8'), /^eval_interval: 30$/m);
  });

  it('saves training checkpoints in the original format', async () => {
    const last = join(project, 'circles', 'weights', 'last.pt');
    const top = readTorchCheckpoint(readFileSync(last), last) as Map<string, unknown>;
    assert.equal(top.get('epoch'), EPOCHS - 1);
    assert.equal(top.get('is_ema_weights'), true);
    assert.equal(top.get('ema_updates'), EPOCHS * 2);
    const r = await readTrainingCheckpoint(last);
    assert.equal(r.epoch, EPOCHS - 1);
    // BatchNorm counters move with every step in the raw weights
    assert.equal((r.trainModel.get('backbone.conv0.bn.num_batches_tracked')!.data as BigInt64Array)[0], BigInt(EPOCHS * 2));
  });

  it('resumes from last.pt through the CLI', async () => {
    const last = join(project, 'circles', 'weights', 'last.pt');
    // One epoch plus the final validation: about 20 s idle, past the helper's 2 min kill under heavy
    // load. The test is about what the resumed run does, so the child gets a hang guard only.
    const run = await runCli(['train', `resume=${last}`, `epochs=${EPOCHS + 1}`, 'verbose=false'], tmp, {}, { timeoutMs: 15 * 60_000 });
    assert.equal(run.code, 0, `exit ${run.code}${run.code === null ? ' (killed)' : ''}: ${run.stderr}`);
    assert.match(run.stdout, /Results saved to .*circles/);
    const lines = readFileSync(join(project, 'circles', 'results.csv'), 'utf8').trim().split('\n');
    assert.equal(lines.length, EPOCHS + 2);
    assert.match(lines[EPOCHS + 1]!, new RegExp(`^${EPOCHS + 1},`));
    const r = await readTrainingCheckpoint(last);
    assert.equal(r.epoch, EPOCHS);
    assert.equal(r.emaUpdates, EPOCHS * 2 + 2);
    assert.equal(r.config.epochs, EPOCHS + 1);
    assert.equal(r.config.batch, 4);
  });
});
