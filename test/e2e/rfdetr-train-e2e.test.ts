/**
 * RF-DETR fine-tuned end to end through `model.train()`: the original's RF-DETR-n train fixture
 * weights (randomised, 80 classes) loaded with LibreYOLO(), their class heads tiled to the dataset's
 * 6 classes, trained on 4 synthetic shape images at 128 px (64 tokens: fewer than the 300 queries
 * per group, the upstream k < 300 path) with RF-DETR's own recipe (grouped Hungarian matching,
 * IA-BCE, AdamW groups with the DINOv2 layer decay, EMA, flip). The loss must fall and the best
 * (EMA) checkpoint must find the objects on the train images. With the schedule's LR at 0 (every
 * group's LR is a multiple of it) both checks fail: by hand, a mean loss of 56.9 over the first 3
 * epochs and 56.0 over the last 5, and 0 of 5 objects found.

 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { generateSynthDataset } from '../../src/data/synth.ts';
import type { TrainResults } from '../../src/train/trainer.ts';
import { fixture } from '../helpers/fixtures.ts';
import { tempDir } from '../helpers/temp.ts';
import { fineTune, recallOnTrainImages } from '../helpers/train-e2e.ts';

const IMGSZ = 128;
const EPOCHS = 40;

describe('RF-DETR n fine-tuned end to end', () => {
  let root = '';
  let results: TrainResults;
  let seconds = 0;

  before(async () => {
    const tmp = tempDir();
    const synth = await generateSynthDataset({
      out: join(tmp, 'shapes'), seed: 3, train: 4, val: 4, imgsz: IMGSZ, classes: ['circle', 'square', 'triangle', 'star', 'ellipse', 'rectangle'],
      minObjects: 1, maxObjects: 2, sizeRange: [0.35, 0.6], square: true,
    });
    root = synth.root;
    const weights = join(tmp, 'LibreRFDETRn.pt');
    copyFileSync(fixture('rfdetrn_ref.pt'), weights);
    ({ results, seconds } = await fineTune(weights, {
      data: synth.yaml, epochs: EPOCHS, batch: 2, nbs: 2, imgsz: IMGSZ, multi_scale: false, crop_resize_prob: 0, lr0: 3e-4,
      workers: 0, seed: 0, eval_interval: 20, project: join(tmp, 'runs'), name: 'rfdetr', verbose: false,
    }));
  });

  it('lowers the loss with its ce, bbox and giou terms', () => {
    const l = results.epoch_losses;
    assert.equal(l.length, EPOCHS);
    const first = l.slice(0, 3).reduce((a, b) => a + b, 0) / 3;
    const last = l.slice(-5).reduce((a, b) => a + b, 0) / 5;
    assert.ok(last < 0.4 * first, `mean loss of the last 5 epochs ${last.toFixed(2)} should be well below the first 3 (${first.toFixed(2)}); ${seconds.toFixed(0)} s`);
    assert.ok(results.epoch_loss_items.every((x) => x.ce! > 0 && x.bbox! > 0 && x.giou! > 0));
  });

  it('writes a best.pt that loads as RF-DETR n with the 6 classes and finds the objects', async () => {
    assert.ok(results.best_checkpoint && existsSync(results.best_checkpoint));
    const r = await recallOnTrainImages(results.best_checkpoint, root, IMGSZ, 0.25);
    assert.deepEqual([r.family, r.size], ['rfdetr', 'n']);
    assert.deepEqual(Object.values(r.names), ['circle', 'square', 'triangle', 'star', 'ellipse', 'rectangle']);
    assert.ok(r.total >= 5);
    assert.ok(r.found >= 2, `found ${r.found}/${r.total} at IoU 0.5, conf 0.25`);
  });
});
