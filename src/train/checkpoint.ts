/**
 * Training checkpoints in the original's format: a plain dict whose `model` is the
 * state_dict (the EMA weights when EMA is on), the v1.0 metadata keys, and the training keys
 * `epoch`, `optimizer` (torch optimizer state_dict), `config`, `loss`, the best-metric keys and,
 * with EMA, `train_model` (raw weights), `ema` (same tensors as `model`) and `ema_updates`.
 * `LibreYOLO()` loads these files like any checkpoint; `readTrainingCheckpoint` gives back what a
 * resumed run needs.
 */
import { readFile } from 'node:fs/promises';
import { LibreYOLOError } from '../errors.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { VERSION } from '../version.ts';
import { saveCheckpointPt } from '../weights/checkpoint.ts';
import { isHostTensor, PyOrderedDict, pyFloat, type PyValue, type PyWritable } from '../weights/pickle/index.ts';
import { isFloatField } from './config.ts';
import { readTorchCheckpoint } from '../weights/torch-checkpoint.ts';

export const BEST_METRIC_KEY = 'metrics/mAP50-95';

export interface BestState {
  /** Best mAP50-95 so far (0 before the first validation). */
  mAP50_95: number;
  mAP50: number;
  /** 1-based epoch of the best validation; 0 before the first. */
  epoch: number;
  /** Whether any validation has happened (the first one is always best). */
  validated: boolean;
}

export const NO_BEST: BestState = { mAP50_95: 0, mAP50: 0, epoch: 0, validated: false };

export interface TrainingCheckpoint {
  /** Weights saved as `model` (EMA weights when EMA is on). */
  model: Map<string, HostTensor>;
  /** Raw (non-EMA) weights; present when EMA is on. */
  trainModel?: Map<string, HostTensor>;
  emaUpdates?: number;
  /** 0-based index of the epoch just finished. */
  epoch: number;
  optimizer: PyWritable;
  config: Record<string, unknown>;
  /** Mean total loss of the epoch. */
  loss: number | null;
  best: BestState;
  family: string;
  size: string;
  nc: number;
  names: Record<number, string>;
  imgsz: number;
  /** The network's task (default detect). */
  task?: string;
}

function plain(v: unknown): PyWritable {
  if (v === undefined) return null;
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v as PyWritable;
}

const isNumbers = (v: unknown): v is number | number[] => typeof v === 'number' || (Array.isArray(v) && v.every((x) => typeof x === 'number'));

/** The train config with its float fields written as floats (`mosaic_prob: 1.0`, not `1`). */
function configForCheckpoint(config: Record<string, unknown>): PyWritable {
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, isFloatField(k) && isNumbers(v) ? pyFloat(v) : plain(v)]));
}

/** Writes the checkpoint atomically (temp file + rename). */
export async function saveTrainingCheckpoint(path: string, ck: TrainingCheckpoint): Promise<void> {
  const ema = ck.trainModel !== undefined;
  const metadata: Record<string, unknown> = {
    schema_version: '1.0',
    libreyolo_version: VERSION,
    model_family: ck.family,
    size: ck.size,
    task: ck.task ?? 'detect',
    nc: ck.nc,
    names: ck.names,
    imgsz: ck.imgsz,
    epoch: ck.epoch,
    optimizer: ck.optimizer,
    config: configForCheckpoint(ck.config),
    loss: ck.loss === null ? null : pyFloat(ck.loss),
    best_mAP50_95: pyFloat(ck.best.mAP50_95),
    best_mAP50: pyFloat(ck.best.mAP50),
    best_metric_key: BEST_METRIC_KEY,
    best_metric_value: pyFloat(ck.best.mAP50_95),
    best_epoch: ck.best.epoch,
    is_ema_weights: ema,
    best_metric: pyFloat(ck.best.mAP50_95),
    best_metric_name: BEST_METRIC_KEY,
  };
  if (ema) {
    metadata.train_model = new PyOrderedDict(ck.trainModel!);
    // Same tensor objects as `model`: stored once in the zip, as torch would share the storages.
    metadata.ema = new PyOrderedDict(ck.model);
    metadata.ema_updates = ck.emaUpdates ?? 0;
  }
  await saveCheckpointPt(path, ck.model, metadata);
}

export interface ResumeState {
  /** Weights to continue training from (`train_model`, else `model`). */
  trainModel: Map<string, HostTensor>;
  /** EMA weights (`ema`, else `model`) and update count, when the run used EMA. */
  ema: Map<string, HostTensor> | null;
  emaUpdates: number;
  optimizer: PyValue;
  /** 0-based epoch finished in the checkpoint; training continues at epoch + 1. */
  epoch: number;
  config: Record<string, unknown>;
  best: BestState;
}

function stateDictOf(v: PyValue | undefined): Map<string, HostTensor> | null {
  if (!(v instanceof Map)) return null;
  const out = new Map<string, HostTensor>();
  for (const [k, t] of v) if (typeof k === 'string' && isHostTensor(t)) out.set(k, t);
  return out.size ? out : null;
}

function toNumber(v: PyValue | undefined): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  return undefined;
}

function toPlainConfig(v: PyValue | undefined): Record<string, unknown> {
  const conv = (x: PyValue): unknown => {
    if (x instanceof Map) return Object.fromEntries([...x].map(([k, y]) => [String(k), conv(y)]));
    if (Array.isArray(x)) return x.map(conv);
    if (typeof x === 'bigint') return Number(x);
    return x;
  };
  return v instanceof Map ? (conv(v) as Record<string, unknown>) : {};
}

/** Reads what a resumed run needs; a file without training state is a clear error. */
export async function readTrainingCheckpoint(path: string): Promise<ResumeState> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (cause) {
    throw new LibreYOLOError('checkpoint_not_found', `Cannot resume: checkpoint ${path} not found.`, { cause });
  }
  const top = readTorchCheckpoint(bytes, path);
  if (!(top instanceof Map)) throw new LibreYOLOError('model_load_failed', `Cannot resume from ${path}: it holds no dict.`);
  const epoch = toNumber(top.get('epoch'));
  const optimizer = top.get('optimizer');
  if (epoch === undefined || !(optimizer instanceof Map)) {
    throw new LibreYOLOError('checkpoint_not_found', `Cannot resume from ${path}: it is not a training checkpoint (no epoch/optimizer state).`,
      { suggestion: 'Resume from the weights/last.pt that a training run wrote.' });
  }
  const trainModel = stateDictOf(top.get('train_model')) ?? stateDictOf(top.get('model'));
  if (!trainModel) throw new LibreYOLOError('model_load_failed', `Cannot resume from ${path}: it holds no model weights.`);
  const emaSd = top.has('ema_updates') ? stateDictOf(top.get('ema')) ?? stateDictOf(top.get('model')) : null;
  const best = toNumber(top.get('best_mAP50_95')) ?? 0;
  const bestEpoch = toNumber(top.get('best_epoch')) ?? 0;
  return {
    trainModel,
    ema: emaSd,
    emaUpdates: toNumber(top.get('ema_updates')) ?? 0,
    optimizer,
    epoch,
    config: toPlainConfig(top.get('config')),
    best: { mAP50_95: best, mAP50: toNumber(top.get('best_mAP50')) ?? 0, epoch: bestEpoch, validated: bestEpoch > 0 },
  };
}
