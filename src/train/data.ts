/**
 * The trainer's view of its data: the dataset config (names, nc), the train split behind a seeded
 * worker loader with the family's augmentations (mosaic, then YOLOX's random affine when the family's
 * recipe has it or degrees/shear ask for it, then mixup when mixup_prob > 0; mosaic and mixup
 * switched off per epoch for close-mosaic), and the val split for validation.
 */
import { LibreYOLOError } from '../errors.ts';
import type { Warn } from '../util/warn.ts';
import { dataDirConfig, ensureDataset, loadDatasetConfig, loadSplit, type DatasetConfig, type DatasetSplit } from '../data/dataset.ts';
import { createLoader, type DataLoader } from '../data/loader.ts';
import type { TrainConfig } from './config.ts';
import type { TrainBatch } from '../data/train-batch.ts';

export interface TrainData {
  readonly config: DatasetConfig;
  readonly trainImages: number;
  readonly batchesPerEpoch: number;
  /** The split validated during training (null when the YAML has no `val`). */
  readonly val: DatasetSplit | null;
  epoch(epoch: number, options: { mosaic: boolean; strong?: boolean }): AsyncIterable<TrainBatch>;
  close(): Promise<void>;
}

export interface TrainDataOptions {
  cwd: string;
  warn: Warn;
  /** The family's mosaic is followed by the random affine (YOLOX); otherwise only when degrees or shear ask for it. */
  mosaicAffine?: boolean;
  /** The sample's last step stretches to imgsz x imgsz instead of letterboxing (the family's input is a stretch: D-FINE). */
  stretch?: boolean;
  /** Progress / download messages (default: stderr). */
  log?: (message: string) => void;
}

/**
 * Whether a family's strong ops (D-FINE) run in `epoch` (0-based): before int(epochs x
 * aug_stop_epoch_ratio) (the original's stop_epoch) and, as its close_mosaic also disables them,
 * never in the last no_aug_epochs.
 */
export function strongAugmentEpoch(epoch: number, cfg: Pick<TrainConfig, 'epochs' | 'no_aug_epochs' | 'aug_stop_epoch_ratio'>): boolean {
  return epoch < cfg.epochs - cfg.no_aug_epochs && epoch < Math.trunc(cfg.epochs * cfg.aug_stop_epoch_ratio);
}

/**
 * Resolves the dataset (downloading a bundled or URL dataset when missing) and reads its YAML; with
 * `data_dir` instead, the folder is the dataset and `names` (the model's) its classes, as in the original.
 */
export async function loadTrainDataConfig(cfg: TrainConfig, options: TrainDataOptions & { names?: Record<number, string> }): Promise<DatasetConfig> {
  const dsOptions = { cwd: options.cwd, ...(options.log ? { log: options.log } : {}) };
  const ds = cfg.data === '' && cfg.data_dir
    ? await dataDirConfig(cfg.data_dir, options.names ?? {}, dsOptions)
    : await loadDatasetConfig(cfg.data, dsOptions);
  await ensureDataset(ds, dsOptions);
  return ds;
}

export async function openTrainData(cfg: TrainConfig, ds: DatasetConfig, options: TrainDataOptions): Promise<TrainData> {
  const dsOptions = { cwd: options.cwd, ...(options.log ? { log: options.log } : {}) };
  const train = await loadSplit(ds, 'train', dsOptions);
  let val: DatasetSplit | null = null;
  if (ds.splits.val?.length) val = await loadSplit(ds, 'val', dsOptions);
  else options.warn(`Dataset '${ds.name}' has no 'val' split: training runs without validation and writes no best.pt.`);
  const affine = options.mosaicAffine || cfg.degrees > 0 || cfg.shear > 0;
  if (affine && !(cfg.mosaic_scale[0] > 0 && cfg.mosaic_scale[0] <= cfg.mosaic_scale[1])) {
    throw new LibreYOLOError('config_range_error', `train: mosaic_scale must be [min, max] with 0 < min <= max, got ${JSON.stringify(cfg.mosaic_scale)}`);
  }
  if (cfg.mixup_prob > 0 && !(cfg.mixup_scale[0] > 0 && cfg.mixup_scale[0] <= cfg.mixup_scale[1])) {
    throw new LibreYOLOError('config_range_error', `train: mixup_scale must be [min, max] with 0 < min <= max, got ${JSON.stringify(cfg.mixup_scale)}`);
  }
  const loader: DataLoader = createLoader(train, {
    imgsz: cfg.imgsz,
    batch: cfg.batch,
    workers: cfg.workers,
    seed: cfg.seed < 0 ? 0 : cfg.seed,
    maxLabels: cfg.max_labels,
    hyp: {
      hsvProb: cfg.hsv_prob, flipProb: cfg.flip_prob, mosaicProb: cfg.mosaic_prob,
      affine: affine ? { degrees: cfg.degrees, translate: cfg.translate, scale: cfg.mosaic_scale, shear: cfg.shear } : null,
      mixupProb: cfg.mixup_prob, mixupScale: cfg.mixup_scale, resize: options.stretch ? 'stretch' : 'letterbox',
    },
  });
  return {
    config: ds,
    trainImages: train.images.length,
    batchesPerEpoch: loader.length,
    val,
    epoch(epoch, { mosaic, strong }) {
      loader.mosaic = mosaic;
      loader.strong = strong === true;
      return loader.epoch(epoch);
    },
    close: () => loader.close(),
  };
}
