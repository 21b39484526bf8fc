/**
 * YOLOv9-seg training end to end (segmentation.md 2.6): a YOLOv9-t-seg whose detection part starts
 * from the bundled shapes detector (pretrained= copies every tensor whose key and shape match; the
 * mask head starts fresh) trains briefly on `data synth --task segment`: the loss (mask term
 * included) goes down, the best checkpoint is chosen on the mask mAP50-95, holds exactly the
 * original's segment state-dict keys with task segment, and LibreYOLO() loads it as a segment model
 * whose masks reach mask mAP50 >= 0.5 on the val split.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { stateDictOf } from '../../src/graph/state-dict.ts';
import { LibreYOLO } from '../../src/index.ts';
import { createFreshModel } from '../../src/load.ts';
import { trainModel, type TrainResults } from '../../src/train/trainer.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { validate } from '../../src/val/validate.ts';
import { REPO_ROOT } from '../helpers/fixtures.ts';

const IMGSZ = 128;
const EPOCHS = 12;
const CLASSES = ['circle', 'square', 'triangle', 'star', 'ellipse', 'rectangle']; // the bundled model's

describe('YOLOv9-t-seg training', () => {
  let results: TrainResults;
  let yaml = '';
  let seconds = 0;

  before(async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-seg-train-'));
    yaml = (await generateSynthDataset({ out: join(tmp, 'shapes-seg'), train: 32, val: 8, imgsz: IMGSZ, task: 'segment', seed: 2, classes: CLASSES, maxObjects: 3, sizeRange: [0.3, 0.6] })).yaml;
    // nc 80 gives the class towers the width of the bundled model's (80), so all its tensors transfer.
    const model = createFreshModel('yolo9t-seg', { nc: 80 });
    const t0 = performance.now();
    try {
      results = await trainModel(model, {
        data: yaml, imgsz: IMGSZ, epochs: EPOCHS, batch: 8, lr0: 0.01, warmup_epochs: 0, no_aug_epochs: EPOCHS / 2,
        eval_interval: EPOCHS / 2, workers: 1, seed: 0, pretrained: join(REPO_ROOT, 'assets/LibreYOLO9t-shapes.pt'),
        project: join(tmp, 'runs'), name: 'seg', verbose: false,
      }, { warn: () => undefined });
    } finally {
      await model.close();
    }
    seconds = (performance.now() - t0) / 1000;
  });

  it('lowers the loss, its mask term included', () => {
    const items = results.epoch_loss_items;
    assert.equal(items.length, EPOCHS);
    const first = results.epoch_losses[0]!, last = results.epoch_losses.at(-1)!;
    assert.ok(last < 0.7 * first, `loss ${first.toFixed(3)} -> ${last.toFixed(3)} (${seconds.toFixed(0)} s)`);
    assert.ok(items.every((x) => x.seg! > 0), 'a seg component every epoch');
    assert.ok(items.at(-1)!.seg! < 0.7 * items[0]!.seg!, `seg ${items[0]!.seg} -> ${items.at(-1)!.seg}`);
  });

  it('chooses the best checkpoint on the mask mAP50-95 (the unsuffixed key), and its masks reach mask mAP50 >= 0.5', async () => {
    const mask = results.epoch_metrics.map((m) => m['metrics/mAP50-95(M)']!);
    assert.equal(results.epoch_metrics.length, 2);
    results.epoch_metrics.forEach((m) => assert.equal(m['metrics/mAP50-95'], m['metrics/mAP50-95(M)']));
    assert.equal(results.best_mAP50_95, Math.max(...mask));
    const best = await LibreYOLO(results.best_checkpoint!);
    try {
      assert.equal(best.task, 'segment');
      const v = await validate(best, yaml, { imgsz: IMGSZ, batch: 8 });
      assert.ok(v.metrics['metrics/mAP50(M)']! >= 0.5, `mask mAP50 ${v.metrics['metrics/mAP50(M)']} (box ${v.metrics['metrics/mAP50(B)']}; ${seconds.toFixed(0)} s)`);
    } finally {
      await best.close();
    }
  });

  it('writes checkpoints with exactly the original\'s segment keys and shapes, task segment', async () => {
    const ck = await loadCheckpointFile(results.best_checkpoint!);
    // The class towers keep the width they started with (80); the class convs have the dataset's 6 rows.
    const want = stateDictOf(createFreshModel('yolo9t-seg', { nc: 80 }).network!);
    const got = ck.stateDict;
    assert.equal(got.size, 1398);
    assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
    for (const [k, t] of want) {
      const dims = /^head\.cv3\.\d\.2\./.test(k) ? [6, ...t.dims.slice(1)] : t.dims;
      assert.deepEqual(got.get(k)!.dims, dims, k);
    }
    assert.equal((ck.metadata as Record<string, unknown>).task, 'segment');
  });
});
