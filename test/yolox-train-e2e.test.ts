/**
 * YOLOX training end to end on a tiny synthetic dataset (circles, 96 px): a fresh YOLOX-n trained
 * briefly (320 steps) lowers its loss and writes a best.pt in the original's checkpoint format that LibreYOLO()
 * loads as yolox-n and that finds the objects; `libreyolo train model=yoloxn`, `libreyolo val` and
 * `libreyolo profile run --weights yoloxn` run on it.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { generateSynthDataset } from '../src/data/synth.ts';
import { LibreYOLO, type Results } from '../src/index.ts';
import { createFreshModel } from '../src/load.ts';
import { readTrainingCheckpoint } from '../src/train/checkpoint.ts';
import { trainModel, type TrainResults } from '../src/train/trainer.ts';
import { runCli } from './helpers/cli.ts';

const IMGSZ = 96;
const EPOCHS = 80;

function groundTruth(root: string, image: string): number[][] {
  const text = readFileSync(join(root, 'labels', 'train', image.replace(/\.png$/, '.txt')), 'utf8').trim();
  return text.split('\n').map((l) => {
    const [c, cx, cy, w, h] = l.split(' ').map(Number) as [number, number, number, number, number];
    return [c, (cx - w / 2) * IMGSZ, (cy - h / 2) * IMGSZ, (cx + w / 2) * IMGSZ, (cy + h / 2) * IMGSZ];
  });
}

function iou(a: number[], b: number[]): number {
  const ix = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!));
  const iy = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
  const inter = ix * iy;
  return inter / ((a[2]! - a[0]!) * (a[3]! - a[1]!) + (b[2]! - b[0]!) * (b[3]! - b[1]!) - inter);
}

describe('YOLOX training end to end', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-yolox-e2e-'));
  const project = join(tmp, 'runs');
  let root = '';
  let yaml = '';
  let results: TrainResults;
  let seconds = 0;

  before(async () => {
    const synth = await generateSynthDataset({
      out: join(tmp, 'circles'), seed: 1, train: 8, val: 4, imgsz: IMGSZ, classes: ['circle'],
      minObjects: 1, maxObjects: 2, sizeRange: [0.3, 0.6], square: true,
    });
    root = synth.root;
    yaml = synth.yaml;
    const model = createFreshModel('yoloxn');
    const t0 = performance.now();
    try {
      // No augmentation (a short run on 8 images), L1 in the last 10 epochs as the original's no-aug phase.
      results = await trainModel(model, {
        data: yaml, epochs: EPOCHS, batch: 2, imgsz: IMGSZ, workers: 1, seed: 0, warmup_epochs: 1, no_aug_epochs: 10,
        mosaic_prob: 0, mixup_prob: 0, degrees: 0, shear: 0, eval_interval: 40, project, name: 'circles', verbose: false,
      }, { warn: () => undefined });
    } finally {
      await model.close();
    }
    seconds = (performance.now() - t0) / 1000;
  });

  it('lowers the loss, logging iou / obj / cls / l1 (l1 only in the no-aug epochs)', () => {
    const l = results.epoch_losses;
    assert.equal(l.length, EPOCHS);
    const first = l.slice(0, 5).reduce((a, b) => a + b, 0) / 5;
    const last = l.slice(-15, -10).reduce((a, b) => a + b, 0) / 5;
    assert.ok(last < 0.6 * first, `mean loss of epochs 66-70 ${last.toFixed(3)} should be well below the first 5 (${first.toFixed(3)}); ${seconds.toFixed(0)}s`);
    const items = results.epoch_loss_items;
    assert.ok(items.every((x) => x.iou! > 0 && x.obj! > 0 && x.cls! > 0));
    assert.ok(items.slice(0, EPOCHS - 10).every((x) => x.l1 === 0), 'no L1 before the no-aug epochs');
    assert.ok(items.slice(EPOCHS - 10).every((x) => x.l1! > 0), 'L1 in the no-aug epochs');
  });

  it("writes best.pt in the original's format that LibreYOLO() loads as yolox-n and that finds the objects", async () => {
    assert.ok(results.best_checkpoint && existsSync(results.best_checkpoint));
    const ckpt = await readTrainingCheckpoint(results.best_checkpoint);
    assert.ok(ckpt.trainModel.has('head.cls_preds.0.weight'));
    assert.ok(results.best_mAP50 > 0.1, `best mAP50 ${results.best_mAP50}`);
    const model = await LibreYOLO(results.best_checkpoint);
    try {
      assert.equal(model.family.name, 'yolox');
      assert.equal(model.size, 'n');
      assert.deepEqual(model.names, { 0: 'circle' });
      let found = 0;
      let total = 0;
      for (const image of readdirSync(join(root, 'images', 'train')).sort()) {
        const r = (await model.predict(join(root, 'images', 'train', image), { conf: 0.1, imgsz: IMGSZ })) as Results;
        for (const gt of groundTruth(root, image)) {
          total++;
          if (r.boxes.xyxy.some((b, k) => r.boxes.cls[k] === gt[0] && iou(b, gt.slice(1)) >= 0.5)) found++;
        }
      }
      assert.ok(total >= 8);
      // 320 steps on 8 images: measured 5/12 at conf 0.1 (3/12 at 0.25), mAP50 0.26; YOLOv9 gets
      // further in the same budget (its test holds 0.6 at conf 0.25).
      assert.ok(found / total >= 0.25, `recall ${found}/${total} at IoU 0.5, conf 0.1`);
    } finally {
      await model.close();
    }
    const lines = readFileSync(join(project, 'circles', 'results.csv'), 'utf8').trim().split('\n');
    assert.deepEqual(lines[0]!.split(',').slice(10, 14), ['train/cls_loss', 'train/iou_loss', 'train/l1_loss', 'train/obj_loss']);
  });

  it('libreyolo train model=yoloxn, val and profile run work on YOLOX', async () => {
    const train = await runCli(['train', 'model=yoloxn', `data=${yaml}`, 'epochs=1', 'batch=4', `imgsz=${IMGSZ}`, 'workers=0',
      'mosaic_prob=0', 'mixup_prob=0', 'degrees=0', 'shear=0', `project=${join(tmp, 'cli')}`, 'name=x', 'verbose=false'], tmp);
    assert.equal(train.code, 0, train.stderr);
    assert.match(train.stdout, /Results saved to .*cli[/\\]x/);
    const val = await runCli(['val', `model=${results.best_checkpoint}`, `data=${yaml}`, `imgsz=${IMGSZ}`], tmp);
    assert.equal(val.code, 0, val.stderr);
    assert.match(val.stdout, /^Model: yolox-n \(YOLOX n, 1 classes/m);
    assert.match(val.stdout, /mAP50/);
    const prof = await runCli(['profile', 'run', yaml, '--weights', 'yoloxn', '--device', 'cpu', '--batch', '2', '--imgsz', String(IMGSZ),
      '--workers', '0', '--steps', '2', '--warmup', '1', '--project', join(tmp, 'prof'), '--json'], tmp);
    assert.equal(prof.code, 0, prof.stderr);
    const out = JSON.parse(prof.stdout) as { img_per_s: number; profile: string };
    assert.ok(out.img_per_s > 0);
    assert.ok(existsSync(out.profile));
  });
});
