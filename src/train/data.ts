/**
 * The trainer's view of its data: the dataset config (names, nc), the train split behind a seeded
 * worker loader running the family's augmentation recipe (data/recipe.ts: its steps resolved against
 * the run's options, its scheduled steps switched per epoch), and the val split for validation.
 */
import type { Warn } from '../util/warn.ts';
import { dataDirConfig, ensureDataset, loadDatasetConfig, loadSplit, type DatasetConfig, type DatasetSplit } from '../data/dataset.ts';
import { createLoader, type DataLoader } from '../data/loader.ts';
import { resolveRecipe, type AugmentRecipe } from '../data/recipe.ts';
import type { TrainConfig } from './config.ts';
import type { TrainBatch } from '../data/train-batch.ts';

export interface TrainData {
  readonly config: DatasetConfig;
  readonly trainImages: number;
  readonly batchesPerEpoch: number;
  /** The split validated during training (null when the YAML has no `val`). */
  readonly val: DatasetSplit | null;
  /** Whether the recipe's scheduled steps (mosaic and what follows it, strong ops) run in `epoch` (0-based). */
  augmentation(epoch: number): { mosaic: boolean; strong: boolean };
  epoch(epoch: number, options: { mosaic: boolean; strong?: boolean }): AsyncIterable<TrainBatch>;
  close(): Promise<void>;
}

export interface TrainDataOptions {
  cwd: string;
  warn: Warn;
  /** The family's augmentation pipeline (`TrainingHooks.augment`); default the core's `BASE_RECIPE`. */
  recipe: AugmentRecipe;
  /** The sample's last step stretches to imgsz x imgsz instead of letterboxing (the family's input is a stretch: D-FINE). */
  stretch?: boolean;
  /** False: samples start from the decoded image, not one fitted into imgsz (TrainingHooks.unresizedSamples). */
  preResize?: boolean;
  /** Progress / download messages (default: stderr). */
  log?: (message: string) => void;
  /** Segment training: mask targets at 1 / this ratio of the input (data/loader.ts `masks`). */
  masks?: number;
}

/**
 * Resolves the dataset (downloading a bundled or URL dataset when missing) and reads its YAML; with
 * `data_dir` instead, the folder is the dataset and `names` (the model's) its classes, as in the original.
 */
export async function loadTrainDataConfig(cfg: TrainConfig, options: Pick<TrainDataOptions, 'cwd' | 'warn' | 'log'> & { names?: Record<number, string> }): Promise<DatasetConfig> {
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
  const recipe = resolveRecipe(options.recipe, (name) => (Object.hasOwn(cfg, name) ? (cfg as unknown as Record<string, unknown>)[name] : undefined));
  const loader: DataLoader = createLoader(train, {
    imgsz: cfg.imgsz,
    batch: cfg.batch,
    workers: cfg.workers,
    seed: cfg.seed < 0 ? 0 : cfg.seed,
    maxLabels: cfg.max_labels,
    ...(options.masks ? { masks: options.masks } : {}),
    ...(options.preResize === false ? { preResize: false } : {}),
    hyp: { ...recipe.hyp, resize: options.stretch ? 'stretch' : 'letterbox' },
  });
  return {
    config: ds,
    trainImages: train.images.length,
    batchesPerEpoch: loader.length,
    val,
    augmentation: (epoch) => recipe.epoch(epoch, cfg.epochs),
    epoch(epoch, { mosaic, strong }) {
      loader.mosaic = mosaic;
      loader.strong = strong === true;
      return loader.epoch(epoch);
    },
    close: () => loader.close(),
  };
}
