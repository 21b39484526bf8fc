/**
 * The end-to-end training tests' shared set-up: the tiny synthetic circles dataset (`libreyolo data
 * synth` with 8 train and 4 val images of 1-2 large circles), a fresh model trained on it with the
 * run timed, and the recall of a checkpoint on the train images (a ground truth counts as found
 * when a box of its class at IoU >= 0.5 is predicted above the confidence threshold).
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { LibreYOLO, type Results } from '../../src/index.ts';
import { createFreshModel } from '../../src/load.ts';
import { trainModel, type TrainOptions, type TrainResults } from '../../src/train/trainer.ts';

export interface CirclesRun {
  tmp: string;
  /** The runs/ folder training writes into (`<project>/circles`). */
  project: string;
  root: string;
  yaml: string;
  results: TrainResults;
  /** Wall time of the training run, s. */
  seconds: number;
}

/** A fresh temp folder with the circles dataset generated at `imgsz` (square images). */
export async function circlesDataset(prefix: string, imgsz: number): Promise<{ tmp: string; root: string; yaml: string }> {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const synth = await generateSynthDataset({
    out: join(tmp, 'circles'), seed: 1, train: 8, val: 4, imgsz, classes: ['circle'],
    minObjects: 1, maxObjects: 2, sizeRange: [0.3, 0.6], square: true,
  });
  return { tmp, root: synth.root, yaml: synth.yaml };
}

/**
 * Trains a fresh `model` (e.g. `yolo9t`, `yoloxn`) on the circles dataset with `options` (data,
 * project, name, seed, workers and verbose are set here), warnings silenced.
 */
export async function trainOnCircles(prefix: string, model: string, imgsz: number, options: TrainOptions): Promise<CirclesRun> {
  const { tmp, root, yaml } = await circlesDataset(prefix, imgsz);
  const project = join(tmp, 'runs');
  const m = createFreshModel(model);
  const t0 = performance.now();
  let results: TrainResults;
  try {
    results = await trainModel(m, {
      data: yaml, imgsz, workers: 1, seed: 0, project, name: 'circles', verbose: false, ...options,
    }, { warn: () => undefined });
  } finally {
    await m.close();
  }
  return { tmp, project, root, yaml, results, seconds: (performance.now() - t0) / 1000 };
}

/** Loads `weights` with LibreYOLO() (`threads` as given), runs `model.train(options)` and closes the model; the run's wall time in s. */
export async function fineTune(weights: string, options: TrainOptions, threads?: number): Promise<{ results: TrainResults; seconds: number }> {
  const model = await LibreYOLO(weights, { progress: false, ...(threads ? { threads } : {}) });
  const t0 = performance.now();
  try {
    const results = await model.train(options);
    return { results, seconds: (performance.now() - t0) / 1000 };
  } finally {
    await model.close();
  }
}

/** Ground truth of a train image as `[cls, x1, y1, x2, y2]` pixel boxes (square images of side `imgsz`). */
export function groundTruth(root: string, image: string, imgsz: number): number[][] {
  const text = readFileSync(join(root, 'labels', 'train', image.replace(/\.png$/, '.txt')), 'utf8').trim();
  return text.split('\n').map((l) => {
    const [c, cx, cy, w, h] = l.split(' ').map(Number) as [number, number, number, number, number];
    return [c, (cx - w / 2) * imgsz, (cy - h / 2) * imgsz, (cx + w / 2) * imgsz, (cy + h / 2) * imgsz];
  });
}

export function boxIou(a: readonly number[], b: readonly number[]): number {
  const ix = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!));
  const iy = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
  const inter = ix * iy;
  return inter / ((a[2]! - a[0]!) * (a[3]! - a[1]!) + (b[2]! - b[0]!) * (b[3]! - b[1]!) - inter);
}

/** How many train-image ground truths `checkpoint` finds at `conf` (predicting at `imgsz`), of how many. */
export async function recallOnTrainImages(checkpoint: string, root: string, imgsz: number, conf: number): Promise<{ found: number; total: number; names: Record<number, string>; family: string; size: string; imgsz: [number, number] }> {
  const model = await LibreYOLO(checkpoint);
  try {
    let found = 0;
    let total = 0;
    for (const image of readdirSync(join(root, 'images', 'train')).sort()) {
      const r = (await model.predict(join(root, 'images', 'train', image), { conf, imgsz })) as Results;
      for (const gt of groundTruth(root, image, imgsz)) {
        total++;
        if (r.boxes.xyxy.some((b, k) => r.boxes.cls[k] === gt[0] && boxIou(b, gt.slice(1)) >= 0.5)) found++;
      }
    }
    return { found, total, names: model.names, family: model.family.name, size: model.size, imgsz: model.imgsz as [number, number] };
  } finally {
    await model.close();
  }
}
