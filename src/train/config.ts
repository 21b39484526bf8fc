/**
 * Training configuration: the original's fields and defaults (`YOLO9Config`; a family's
 * training hooks override some, as YOLOX's recipe does), plus
 * the training-profile fields and two of this port's own (`threads`, `verbose`).
 * Keys are snake_case like the original's keyword arguments; camelCase spellings are accepted too.
 * Unknown keys are warned about and ignored, as the original does.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { LibreYOLOError } from '../errors.ts';
import type { Warn } from '../util/warn.ts';

export interface TrainConfig {
  /** Dataset YAML path or built-in name (`coco8`, `coco128`); '' when `data_dir` names the dataset. */
  data: string;
  epochs: number;
  /** Global batch; -1 = auto-batch (CPU keeps 16). */
  batch: number;
  imgsz: number;
  lr0: number;
  optimizer: 'sgd' | 'adam' | 'adamw';
  /** '' = the model's device. `cpu`, `0` / `cuda:0`, `webgpu`. */
  device: string;
  workers: number;
  seed: number;
  project: string;
  name: string;
  exist_ok: boolean;
  /** true: resume from the checkpoint the model was loaded from; or a path to `last.pt`. */
  resume: boolean | string;
  amp: boolean;
  patience: number;
  allow_download_scripts: boolean;
  pretrained: boolean | string | null;
  momentum: number;
  weight_decay: number;
  nesterov: boolean;
  scheduler: 'linear' | 'cos' | 'warmcos';
  warmup_epochs: number;
  warmup_lr_start: number;
  min_lr_ratio: number;
  no_aug_epochs: number;
  mosaic_prob: number;
  mixup_prob: number;
  hsv_prob: number;
  flip_prob: number;
  degrees: number;
  translate: number;
  shear: number;
  mosaic_scale: [number, number];
  mixup_scale: [number, number];
  ema: boolean;
  ema_decay: number;
  /**
   * From the no-aug epoch (epochs - no_aug_epochs) on, the EMA decay becomes this constant, without
   * the warm-up ramp (D-FINE's "EMA restart": the original's ema_restart_decay); null = no switch.
   */
  ema_restart_decay: number | null;
  /** A family with strong ops (D-FINE) stops them at epoch int(epochs x this); default 1 (never before the no-aug epochs). */
  aug_stop_epoch_ratio: number;
  /** The original's per-batch random input size (D-FINE); not implemented: only false is accepted. */
  multi_scale: boolean;
  save_period: number;
  eval_interval: number;
  save_plots: boolean;
  cache: boolean | 'ram' | 'disk';
  freeze: number[] | null;
  nbs: number | null;
  sync_bn: boolean;
  log_interval: number;
  /** A dataset root in the YOLO layout (images/train, labels/train, images/val, ...), used when `data` is absent. */
  data_dir: string | null;
  max_labels: number;
  /** Global L2 gradient-norm clip before each optimizer step (torch's clip_grad_norm_); 0 = off. */
  clip_max_norm: number;
  profile: boolean;
  profile_then_stop: boolean;
  profile_warmup: number;
  profile_steps: number;
  profile_trace: boolean;
  profile_open: boolean;
  /** ONNX Runtime intra-op threads for the train step (default: all cores). */
  threads: number | null;
  /** Progress bar and epoch lines on stderr. */
  verbose: boolean;
}

export const TRAIN_DEFAULTS: Omit<TrainConfig, 'data'> = {
  epochs: 300, batch: 16, imgsz: 640, lr0: 0.01, optimizer: 'sgd', device: '', workers: 8, seed: 0,
  project: 'runs/train', name: 'yolo9_exp', exist_ok: false, resume: false, amp: true, patience: 50,
  allow_download_scripts: false, pretrained: null,
  momentum: 0.937, weight_decay: 5e-4, nesterov: true, scheduler: 'linear', warmup_epochs: 3, warmup_lr_start: 1e-4,
  min_lr_ratio: 0.01, no_aug_epochs: 15, mosaic_prob: 1.0, mixup_prob: 0.0, hsv_prob: 1.0, flip_prob: 0.5,
  degrees: 0.0, translate: 0.1, shear: 0.0, mosaic_scale: [0.5, 1.5], mixup_scale: [0.5, 1.5], ema: true, ema_decay: 0.9999,
  ema_restart_decay: null, aug_stop_epoch_ratio: 1, multi_scale: false, save_period: 10, eval_interval: 10, save_plots: false, cache: false, freeze: null, nbs: null, sync_bn: false,
  log_interval: 10, data_dir: null, max_labels: 100, clip_max_norm: 0,
  profile: false, profile_then_stop: false, profile_warmup: 5, profile_steps: 20, profile_trace: true, profile_open: true,
  threads: null, verbose: true,
};

type Kind = 'int' | 'number' | 'bool' | 'string' | 'nullable-string' | 'pair' | 'nullable-int' | 'nullable-number' | 'int-list' | 'resume' | 'pretrained' | 'cache';

const KINDS: Record<keyof TrainConfig, Kind> = {
  data: 'string', epochs: 'int', batch: 'int', imgsz: 'int', lr0: 'number', optimizer: 'string', device: 'string', workers: 'int',
  seed: 'int', project: 'string', name: 'string', exist_ok: 'bool', resume: 'resume', amp: 'bool', patience: 'int',
  allow_download_scripts: 'bool', pretrained: 'pretrained', momentum: 'number', weight_decay: 'number', nesterov: 'bool',
  scheduler: 'string', warmup_epochs: 'number', warmup_lr_start: 'number', min_lr_ratio: 'number', no_aug_epochs: 'int',
  mosaic_prob: 'number', mixup_prob: 'number', hsv_prob: 'number', flip_prob: 'number', degrees: 'number', translate: 'number',
  shear: 'number', mosaic_scale: 'pair', mixup_scale: 'pair', ema: 'bool', ema_decay: 'number', ema_restart_decay: 'nullable-number', aug_stop_epoch_ratio: 'number', multi_scale: 'bool', save_period: 'int',
  eval_interval: 'int', save_plots: 'bool', cache: 'cache', freeze: 'int-list', nbs: 'nullable-int', sync_bn: 'bool',
  log_interval: 'int', data_dir: 'nullable-string', max_labels: 'int', clip_max_norm: 'number', profile: 'bool', profile_then_stop: 'bool',
  profile_warmup: 'int', profile_steps: 'int', profile_trace: 'bool', profile_open: 'bool', threads: 'nullable-int', verbose: 'bool',
};

/** Whether the original holds `key` as a float (or a pair of floats): checkpoints write it as one. */
export function isFloatField(key: string): boolean {
  const kind = (KINDS as Record<string, Kind | undefined>)[key];
  return kind === 'number' || kind === 'nullable-number' || kind === 'pair';
}

/** Keys of the original's `train()` that are not config fields: refused, this package has neither. */
const NOT_SUPPORTED_KEYS: Readonly<Record<string, string>> = {
  callbacks: "train: 'callbacks' is not supported: this package has no training callbacks. Remove it; results.csv and summary.json hold every epoch's figures.",
  loggers: "train: 'loggers' is not supported: this package has no training loggers. Remove it; results.csv and summary.json hold every epoch's figures.",
};

/**
 * Fields of the original's config this package cannot honour, refused when set to anything but
 * their default (an option is implemented or refused, never accepted and ignored).
 */
const REFUSED: Partial<Record<keyof typeof TRAIN_DEFAULTS, string>> = {
  allow_download_scripts: "allow_download_scripts=true is not supported: this package never runs a dataset YAML's Python download script. " +
    'Download and unzip the dataset yourself, or give download: an http(s) URL of a zip (that downloads without this option).',
  freeze: 'freeze is not supported: this package trains every layer. Remove freeze.',
  cache: 'cache is not supported: images are decoded every epoch (cache only changes speed in the original). Remove cache.',
};

/**
 * Fields that change nothing here and in the original alike, with what to say when one is set:
 * accepted so LibreYOLO scripts run, never silently.
 */
const NO_EFFECT: Partial<Record<keyof typeof TRAIN_DEFAULTS, string>> = {
  sync_bn: 'sync_bn has no effect on one device: the original converts BatchNorm to SyncBatchNorm only in multi-GPU (DDP) training, ' +
    'and this package trains on one device.',
};

const snake = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function typeError(key: string, want: string, v: unknown): LibreYOLOError {
  return new LibreYOLOError('config_type_error', `train: ${key} must be ${want}, got ${JSON.stringify(v) ?? String(v)}`);
}

function coerce(key: string, kind: Kind, v: unknown): unknown {
  const num = (x: unknown): number => (typeof x === 'string' && x.trim() !== '' ? Number(x) : x) as number;
  switch (kind) {
    case 'int': {
      const n = num(v);
      if (typeof n !== 'number' || !Number.isInteger(n)) throw typeError(key, 'an integer', v);
      return n;
    }
    case 'nullable-int': {
      if (v === null || v === undefined || v === 'None' || v === 'null') return null;
      return coerce(key, 'int', v);
    }
    case 'nullable-number': {
      if (v === null || v === undefined || v === 'None' || v === 'null') return null;
      return coerce(key, 'number', v);
    }
    case 'number': {
      const n = num(v);
      if (typeof n !== 'number' || !Number.isFinite(n)) throw typeError(key, 'a number', v);
      return n;
    }
    case 'bool': {
      if (typeof v === 'boolean') return v;
      if (typeof v === 'string' && /^(true|1)$/i.test(v)) return true;
      if (typeof v === 'string' && /^(false|0)$/i.test(v)) return false;
      throw typeError(key, 'true or false', v);
    }
    case 'string':
      if (typeof v === 'string') return v;
      if (typeof v === 'number') return String(v);
      throw typeError(key, 'a string', v);
    case 'nullable-string':
      if (v === null || v === undefined) return null;
      return coerce(key, 'string', v);
    case 'pair': {
      const a = typeof v === 'string' ? v.replace(/^[[(]|[\])]$/g, '').split(',').map(Number) : v;
      if (!Array.isArray(a) || a.length !== 2 || !a.every((x) => typeof x === 'number' && Number.isFinite(x))) throw typeError(key, 'a pair of numbers', v);
      return [a[0], a[1]];
    }
    case 'int-list': {
      if (v === null || v === undefined) return null;
      const a = typeof v === 'number' ? [v] : typeof v === 'string' ? v.replace(/^\[|\]$/g, '').split(',').map(Number) : v;
      if (!Array.isArray(a) || !a.every((x) => Number.isInteger(x))) throw typeError(key, 'a list of integers', v);
      return a;
    }
    case 'resume':
      if (typeof v === 'boolean') return v;
      if (typeof v === 'string' && /^(true|false|1|0)$/i.test(v)) return /^(true|1)$/i.test(v);
      if (typeof v === 'string' && v !== '') return v;
      throw typeError(key, 'true, false or a checkpoint path', v);
    case 'pretrained':
      if (v === null || v === undefined || typeof v === 'boolean') return v ?? null;
      if (typeof v === 'string') return /^(true|false)$/i.test(v) ? /^true$/i.test(v) : v;
      throw typeError(key, 'true, false or a weights path', v);
    case 'cache':
      if (typeof v === 'boolean') return v;
      if (v === 'ram' || v === 'disk') return v;
      if (typeof v === 'string' && /^(true|false)$/i.test(v)) return /^true$/i.test(v) ? 'ram' : false;
      throw typeError(key, "false, 'ram' or 'disk'", v);
  }
}

/**
 * Merges `options` (and the YAML named by `cfg`, under the explicit options) over the defaults and
 * checks every value. Ranges are checked too: they fail before any data or model work starts.
 */
export function resolveTrainConfig(options: Record<string, unknown>, warn: Warn, familyDefaults: Readonly<Record<string, unknown>> = {}): TrainConfig {
  let merged: Record<string, unknown> = {};
  const cfgPath = options.cfg;
  if (cfgPath !== undefined && cfgPath !== null) {
    if (typeof cfgPath !== 'string') throw typeError('cfg', 'a YAML path', cfgPath);
    let parsed: unknown;
    try {
      parsed = parseYaml(readFileSync(cfgPath, 'utf8'));
    } catch (cause) {
      throw new LibreYOLOError('data_not_found', `train: cannot read cfg=${cfgPath}: ${(cause as Error).message}`, { cause });
    }
    if (parsed && typeof parsed === 'object') merged = { ...(parsed as Record<string, unknown>) };
  }
  for (const [k, v] of Object.entries(options)) if (k !== 'cfg' && v !== undefined) merged[k] = v;

  // The family's defaults (its original recipe) sit between the core's and the caller's.
  const out: Record<string, unknown> = { ...TRAIN_DEFAULTS, ...familyDefaults };
  for (const [rawKey, v] of Object.entries(merged)) {
    const key = rawKey in KINDS ? rawKey : snake(rawKey);
    const refusal = NOT_SUPPORTED_KEYS[key];
    if (refusal) throw new LibreYOLOError('config_unsupported', refusal);
    const kind = KINDS[key as keyof TrainConfig];
    if (!kind) {
      warn(`train: unknown argument '${rawKey}' is ignored.`);
      continue;
    }
    out[key] = coerce(key, kind, v);
  }
  // data_dir, as in the original: a dataset root in the YOLO layout, read only when data is absent.
  const hasData = typeof out.data === 'string' && out.data !== '';
  const hasDataDir = typeof out.data_dir === 'string' && out.data_dir !== '';
  if (hasData && hasDataDir) {
    throw new LibreYOLOError('config_conflict', `train: pass data or data_dir, not both (data=${String(out.data)}, data_dir=${String(out.data_dir)}).`);
  }
  if (!hasData && !hasDataDir) {
    throw new LibreYOLOError('config_required_key', 'train: data is required (a dataset YAML path or a built-in name such as coco8).');
  }
  if (!hasData) out.data = '';
  const cfg = out as unknown as TrainConfig;
  cfg.optimizer = String(cfg.optimizer).toLowerCase() as TrainConfig['optimizer'];
  if (!['sgd', 'adam', 'adamw'].includes(cfg.optimizer)) throw new LibreYOLOError('config_type_error', `train: optimizer must be sgd, adam or adamw, got '${cfg.optimizer}'`);
  cfg.scheduler = String(cfg.scheduler).toLowerCase() as TrainConfig['scheduler'];
  if (!['linear', 'cos', 'warmcos'].includes(cfg.scheduler)) throw new LibreYOLOError('config_type_error', `train: scheduler must be linear, cos or warmcos, got '${cfg.scheduler}'`);
  const range = (key: keyof TrainConfig, ok: boolean, want: string): void => {
    if (!ok) throw new LibreYOLOError('config_range_error', `train: ${key} must be ${want}, got ${JSON.stringify(cfg[key])}`);
  };
  range('epochs', cfg.epochs >= 1, '>= 1');
  range('batch', cfg.batch >= 1 || cfg.batch === -1, '>= 1 (or -1 for auto-batch)');
  range('imgsz', cfg.imgsz >= 32 && cfg.imgsz % 32 === 0, 'a positive multiple of 32');
  range('lr0', cfg.lr0 > 0, '> 0');
  range('workers', cfg.workers >= 0, '>= 0');
  range('momentum', cfg.momentum >= 0 && cfg.momentum < 1, 'in [0, 1)');
  range('weight_decay', cfg.weight_decay >= 0, '>= 0');
  range('warmup_epochs', cfg.warmup_epochs >= 0, '>= 0');
  range('no_aug_epochs', cfg.no_aug_epochs >= 0, '>= 0');
  range('ema_decay', cfg.ema_decay > 0 && cfg.ema_decay < 1, 'in (0, 1)');
  range('ema_restart_decay', cfg.ema_restart_decay === null || (cfg.ema_restart_decay > 0 && cfg.ema_restart_decay < 1), 'in (0, 1) (or null: no switch)');
  if (cfg.multi_scale) {
    throw new LibreYOLOError('config_unsupported', 'train: multi_scale=true is not implemented: every batch trains at imgsz (the original D-FINE recipe draws 480-800 px per batch). Leave it out or pass multi_scale=false.');
  }
  range('aug_stop_epoch_ratio', cfg.aug_stop_epoch_ratio >= 0 && cfg.aug_stop_epoch_ratio <= 1, 'in [0, 1]');
  range('save_period', cfg.save_period >= 0, '>= 0');
  range('eval_interval', cfg.eval_interval >= 1, '>= 1');
  range('patience', cfg.patience >= 0, '>= 0');
  range('max_labels', cfg.max_labels >= 1, '>= 1');
  range('clip_max_norm', cfg.clip_max_norm >= 0, '>= 0 (0 = no clipping)');
  range('nbs', cfg.nbs === null || cfg.nbs >= 1, '>= 1');
  range('threads', cfg.threads === null || cfg.threads >= 1, '>= 1');
  for (const k of ['mosaic_prob', 'mixup_prob', 'hsv_prob', 'flip_prob'] as const) range(k, cfg[k] >= 0 && cfg[k] <= 1, 'in [0, 1]');
  if (cfg.resume && cfg.pretrained) throw new LibreYOLOError('config_conflict', 'train: resume and pretrained cannot be used together.');
  for (const [key, message] of Object.entries(REFUSED) as Array<[keyof typeof TRAIN_DEFAULTS, string]>) {
    if (cfg[key] !== TRAIN_DEFAULTS[key]) throw new LibreYOLOError('config_unsupported', `train: ${message}`);
  }
  for (const [key, message] of Object.entries(NO_EFFECT) as Array<[keyof typeof TRAIN_DEFAULTS, string]>) {
    if (cfg[key] !== TRAIN_DEFAULTS[key]) warn(`train: ${message}`);
  }
  return cfg;
}

/** Gradient accumulation steps: round(nbs / batch) when the nominal batch exceeds the micro-batch. */
export function accumulateSteps(cfg: Pick<TrainConfig, 'nbs' | 'batch'>): number {
  if (cfg.nbs === null || cfg.nbs <= cfg.batch) return 1;
  const x = cfg.nbs / cfg.batch;
  let r = Math.round(x);
  if (x % 1 === 0.5 && r % 2 !== 0) r -= 1; // Python's round: ties to even
  return Math.max(1, r);
}
