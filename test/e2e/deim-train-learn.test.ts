/**
 * DEIM fine-tuned end to end through `model.train()`: the original's DEIM-n train fixture weights
 * (`deimn_ref.pt`, randomised, 80 classes) loaded with LibreYOLO(), the class heads rebuilt for the
 * dataset's 6 classes by the trainer (prior score bias), trained on one synthetic 640 px image of
 * 3 shapes with DEIM's own recipe (Hungarian matching, MAL, boxes, FGL, DDF, denoising, AdamW
 * groups with the backbone x0.5, EMA, flip) for 50 steps of batch 1, the strong ops off
 * (aug_stop_epoch_ratio 0) and no no-aug phase (no_aug_epochs 0: no EMA restart, flat LR after the
 * warm-up). The box terms and the total must fall and the (EMA) checkpoint must find the objects.
 *
 * Why this set-up (measured by hand, DEIM-n, 640 px unless said):
 * - One image at batch 1, so every step's BatchNorm batch statistics are the running statistics the
 *   checkpoint predicts with. With batch 1 over 2 images (120 steps), the train-mode forward of the
 *   trained weights scored the 3 objects 0.70 / 0.73 / 0.57 at IoU 0.93 / 0.91 / 0.95, and so did
 *   the eval graph fed each image's own batch statistics, but with the running statistics (the
 *   checkpoint, as predict runs it) its best boxes reached IoU 0.35 / 0.69 / 0.65 at scores of 0.01
 *   or less: the network had learned, the tiny-batch BN statistics did not carry to eval. That, not
 *   the recipe, is why earlier short runs (batch 2 over 4 images) found nothing.
 * - The total loss falls slowly by construction: MAL's target at a matched query is IoU^1.5 and FGL
 *   is weighted by IoU, so both rise as the boxes improve. The box terms carry the learning.
 * - 640: DEIM's eval graph runs at 640 only; a DEIM trained at 320 (accepted, validated at 640)
 *   would meet its objects at twice the size it trained on.
 * - The strong ops (zoom-out, IoU crop) on so few images and DEIM's 12-epoch no-aug phase (a frozen
 *   EMA: the restart's constant decay 0.9999) do not fit a 50-step run.
 *
 * By hand (seed 0, this file): loss 45.59 mean of the first 3 epochs, 32.36 of the last 5 (0.71x);
 * bbox + giou 37.18 -> 14.97 (0.40x); MAL 5.63 -> 10.23 (first and last epoch); 3 of 3 objects
 * found (40 epochs found 2 of 3). With lr0=1e-12 (0 is refused; every group's LR is a multiple of
 * it and the warm-up starts from min(warmup_lr_start, lr0)) both checks fail: loss 45.69 -> 45.43,
 * bbox + giou 37.04 -> 36.42, 0 of 3 objects found. CPU: 78 s (user + sys) for this file.
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

const IMGSZ = 640;
const EPOCHS = 50;
const CLASSES = ['circle', 'square', 'triangle', 'star', 'ellipse', 'rectangle'];

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

describe('DEIM n fine-tuned end to end', () => {
  let root = '';
  let results: TrainResults;
  let seconds = 0;

  before(async () => {
    const tmp = tempDir();
    const synth = await generateSynthDataset({
      out: join(tmp, 'shapes'), seed: 3, train: 1, val: 1, imgsz: IMGSZ, classes: CLASSES,
      minObjects: 2, maxObjects: 3, sizeRange: [0.3, 0.45], square: true,
    });
    root = synth.root;
    const weights = join(tmp, 'LibreDEIMn.pt');
    copyFileSync(fixture('deimn_ref.pt'), weights);
    ({ results, seconds } = await fineTune(weights, {
      data: synth.yaml, epochs: EPOCHS, batch: 1, imgsz: IMGSZ, aug_stop_epoch_ratio: 0, no_aug_epochs: 0,
      workers: 0, seed: 0, threads: 2, eval_interval: EPOCHS, project: join(tmp, 'runs'), name: 'deim', verbose: false,
    }, 2));
  });

  it('lowers its box terms and its loss', () => {
    const l = results.epoch_losses;
    assert.equal(l.length, EPOCHS);
    const boxes = results.epoch_loss_items.map((x) => x.bbox! + x.giou!);
    const [first, last] = [mean(l.slice(0, 3)), mean(l.slice(-5))];
    const [firstBox, lastBox] = [mean(boxes.slice(0, 3)), mean(boxes.slice(-5))];
    const mal = results.epoch_loss_items.map((x) => x.mal!);
    console.log(`# loss ${first.toFixed(2)} -> ${last.toFixed(2)}, bbox + giou ${firstBox.toFixed(2)} -> ${lastBox.toFixed(2)}, mal ${mal[0]!.toFixed(2)} -> ${mal.at(-1)!.toFixed(2)}; ${seconds.toFixed(0)} s`);
    assert.ok(lastBox < 0.6 * firstBox, `bbox + giou of the last 5 epochs ${lastBox.toFixed(2)} should be well below the first 3 (${firstBox.toFixed(2)})`);
    assert.ok(last < 0.85 * first, `mean loss of the last 5 epochs ${last.toFixed(2)} should be below the first 3 (${first.toFixed(2)})`);
    assert.ok(results.epoch_loss_items.every((x) => x.mal! > 0 && x.bbox! > 0 && x.giou! > 0 && x.fgl! > 0));
  });

  it('writes a best.pt that loads as DEIM n with the 6 classes and finds the objects', async () => {
    assert.ok(results.best_checkpoint && existsSync(results.best_checkpoint));
    const r = await recallOnTrainImages(results.best_checkpoint, root, IMGSZ, 0.25);
    console.log(`# found ${r.found}/${r.total} at IoU 0.5, conf 0.25`);
    assert.deepEqual([r.family, r.size], ['deim', 'n']);
    assert.deepEqual(Object.values(r.names), CLASSES);
    assert.ok(r.total >= 2);
    assert.ok(r.found >= 2, `found ${r.found}/${r.total} at IoU 0.5, conf 0.25`);
  });
});
