/**
 * The trainer's view of its data: the dataset config (names, nc), the train split behind a seeded
 * worker loader with the original's YOLO9 augmentations (mosaic switched per epoch for
 * close-mosaic), and the val split for validation.
 */
import type { Warn } from '../util/warn.ts';
import { ensureDataset, loadDatasetConfig, loadSplit, type DatasetConfig, type DatasetSplit } from '../data/dataset.ts';
import { createLoader, type DataLoader } from '../data/loader.ts';
import type { TrainConfig } from './config.ts';
import type { TrainBatch } from './types.ts';

export interface TrainData {
  readonly config: DatasetConfig;
  readonly trainImages: number;
  readonly batchesPerEpoch: number;
  /** The split validated during training (null when the YAML has no `val`). */
  readonly val: DatasetSplit | null;
  epoch(epoch: number, options: { mosaic: boolean }): AsyncIterable<TrainBatch>;
  close(): Promise<void>;
}

export interface TrainDataOptions {
  cwd: string;
  warn: Warn;
  /** Progress / download messages (default: stderr). */
  log?: (message: string) => void;
}

/** Resolves the dataset (downloading a bundled or URL dataset when missing) and reads its YAML. */
export async function loadTrainDataConfig(cfg: TrainConfig, options: TrainDataOptions): Promise<DatasetConfig> {
  const dsOptions = { cwd: options.cwd, ...(options.log ? { log: options.log } : {}) };
  const ds = await loadDatasetConfig(cfg.data, dsOptions);
  await ensureDataset(ds, dsOptions);
  return ds;
}

export async function openTrainData(cfg: TrainConfig, ds: DatasetConfig, options: TrainDataOptions): Promise<TrainData> {
  const dsOptions = { cwd: options.cwd, ...(options.log ? { log: options.log } : {}) };
  const train = await loadSplit(ds, 'train', dsOptions);
  let val: DatasetSplit | null = null;
  if (ds.splits.val?.length) val = await loadSplit(ds, 'val', dsOptions);
  else options.warn(`Dataset '${ds.name}' has no 'val' split: training runs without validation and writes no best.pt.`);
  if (cfg.degrees > 0 || cfg.shear > 0) {
    options.warn(`degrees=${cfg.degrees}, shear=${cfg.shear}: the random affine after mosaic (rotation, shear, mosaic_scale) is not implemented in this package; images get the mosaic, HSV and flip augmentations only.`);
  }
  if (cfg.mixup_prob > 0) options.warn('mixup_prob > 0: mixup is not implemented in this package and is skipped (the original drops the mixed image\'s labels anyway).');
  if (cfg.cache) options.warn(`cache=${String(cfg.cache)} is not implemented; images are decoded every epoch.`);
  const loader: DataLoader = createLoader(train, {
    imgsz: cfg.imgsz,
    batch: cfg.batch,
    workers: cfg.workers,
    seed: cfg.seed < 0 ? 0 : cfg.seed,
    maxLabels: cfg.max_labels,
    hyp: { hsvProb: cfg.hsv_prob, flipProb: cfg.flip_prob, mosaicProb: cfg.mosaic_prob },
  });
  return {
    config: ds,
    trainImages: train.images.length,
    batchesPerEpoch: loader.length,
    val,
    epoch(epoch, { mosaic }) {
      loader.mosaic = mosaic;
      return loader.epoch(epoch);
    },
    close: () => loader.close(),
  };
}
