/**
 * Trains the bundled default detector (assets/LibreYOLO9t-shapes.pt) with the project's own trainer:
 * fresh yolo9t weights, the synthetic shapes dataset of docs/default-model.md, CPU.
 *
 *   node --import tsx scripts/train-default-model.ts [key=value ...]
 *
 * Every key=value is a training option (as `trainModel` takes them) that overrides the recipe below,
 * e.g. `epochs=40`, `data=/path/data.yaml`, or `resume=runs/train/shapes6/weights/last.pt` to continue.
 * The shipped model was trained in three segments (epochs=5 no_aug_epochs=1, then resumed with
 * epochs=12, then with epochs=16); docs/default-model.md has the exact commands. Fresh weights are
 * initialised from `seed` (createFreshModel), which `libreyolo train model=yolo9t` does not do.
 * The dataset comes first (see docs/default-model.md):
 *
 *   libreyolo data synth --out .tmp/shapes6 --seed 6 --train 4000 --val 400 --imgsz 160 --classes 6 \
 *     --min-objects 2 --max-objects 7 --size-range 0.15,0.45
 */
import { LibreYOLO } from '../src/load.ts';
import { createFreshModel } from '../src/load.ts';
import { trainModel, type TrainOptions } from '../src/train/trainer.ts';

export const RECIPE: TrainOptions = {
  data: '.tmp/shapes6/data.yaml',
  epochs: 16,
  batch: 8,
  imgsz: 160,
  optimizer: 'adamw',
  lr0: 0.002,
  warmup_epochs: 1,
  no_aug_epochs: 3,
  eval_interval: 1,
  workers: 1,
  seed: 6,
  project: 'runs/train',
  name: 'shapes6',
};

const overrides: TrainOptions = {};
for (const arg of process.argv.slice(2)) {
  const eq = arg.indexOf('=');
  if (eq <= 0) throw new Error(`expected key=value, got '${arg}'`);
  overrides[arg.slice(0, eq)] = arg.slice(eq + 1);
}
const options: TrainOptions = { ...RECIPE, ...overrides };
const resume = typeof options.resume === 'string' ? options.resume : null;
const model = resume ? await LibreYOLO(resume, { device: 'cpu' }) : createFreshModel('yolo9t', { device: 'cpu', seed: Number(options.seed) });
const t0 = performance.now();
try {
  const r = await trainModel(model, options);
  const secs = (performance.now() - t0) / 1000;
  process.stdout.write(`${JSON.stringify({ seconds: Math.round(secs), best_mAP50: r.best_mAP50, best_mAP50_95: r.best_mAP50_95, best_epoch: r.best_epoch, best: r.best_checkpoint, last: r.last_checkpoint, epoch_metrics: r.epoch_metrics })}\n`);
} finally {
  await model.close();
}
