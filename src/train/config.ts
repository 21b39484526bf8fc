/**
 * Training configuration: the original's fields and defaults (`YOLO9Config`; a family's
 * training hooks override some, as YOLOX's recipe does), plus
 * the training-profile fields and two of this port's own (`threads`, `verbose`).
 * Keys are snake_case like the original's keyword arguments; camelCase spellings are accepted too
 * (the key normalisation predict and export share). Each value goes through its field's rule
 * (util/options.ts), so a mistake reads as it does for predict. Unknown keys are warned about and
 * ignored, as the original does.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { LibreYOLOError } from '../errors.ts';
import type { Warn } from '../util/warn.ts';
import { EMA_TAU } from './ema.ts';
import {
  boolean, booleanText, choice, fraction, fromCli, integer, normalizeKeys, nullable, number, numberText, optionRangeError, optionTypeError, type Rule,
} from '../util/options.ts';

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
  /** EMA warm-up: decay(u) = ema_decay·(1 - exp(-u / ema_tau)) at update u. */
  ema_tau: number;
  /**
   * From the no-aug epoch (epochs - no_aug_epochs) on, the EMA decay becomes this constant, without
   * the warm-up ramp (D-FINE's "EMA restart": the original's ema_restart_decay); null = no switch.
   */
  ema_restart_decay: number | null;
  /** A family with strong ops (D-FINE) stops them at epoch int(epochs x this); default 1 (never before the no-aug epochs). */
  aug_stop_epoch_ratio: number;
  /** The original's random input size per batch (D-FINE) or step; families without it (TrainingHooks.multiScale) refuse true. */
  multi_scale: boolean;
  /** RF-DETR's multi-scale set (S/32 + o)·32 for o = -5..5; only the expanded set exists here (true). */
  expanded_scales: boolean;
  /** The LR is multiplied by 0.1 from epoch `lr_drop` on (RF-DETR's step schedule); null = never. */
  lr_drop: number | null;
  /** RF-DETR's random resize (shortest side 400/500/600) + square crop, per sample with boxes. */
  crop_resize_prob: number;
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
  degrees: 0.0, translate: 0.1, shear: 0.0, mosaic_scale: [0.5, 1.5], mixup_scale: [0.5, 1.5], ema: true, ema_decay: 0.9999, ema_tau: EMA_TAU,
  ema_restart_decay: null, aug_stop_epoch_ratio: 1, multi_scale: false, expanded_scales: true, lr_drop: null, crop_resize_prob: 0, save_period: 10, eval_interval: 10, save_plots: false, cache: false, freeze: null, nbs: null, sync_bn: false,
  log_interval: 10, data_dir: null, max_labels: 100, clip_max_norm: 0,
  profile: false, profile_then_stop: false, profile_warmup: 5, profile_steps: 20, profile_trace: true, profile_open: true,
  threads: null, verbose: true,
};

/** A string option; a number is taken as its text (`name: 5`, `device: 0`), as YAML may give one. */
const STRING: Rule<string> = {
  want: 'a string', form: 'value', fromText: (t) => t,
  check(key, v) {
    if (typeof v === 'string') return v;
    if (typeof v === 'number') return String(v);
    throw optionTypeError(key, 'a string', v);
  },
};

/** `[0.5, 1.5]`, also as text: `0.5,1.5`, `[0.5,1.5]`, `(0.5,1.5)`. */
/** Comma-separated numbers (`0.5,1.5`, `[0.5,1.5]`, `(0.5,1.5)`) as a list; other text stays text. */
function numberListText(t: string): unknown {
  const parts = t.trim().replace(/^[[(]|[\])]$/g, '').split(',').map((p) => numberText(p));
  return parts.every((p) => typeof p === 'number') ? parts : t;
}

const PAIR: Rule<[number, number]> = {
  want: 'a pair of numbers', form: 'value', float: true,
  fromText: numberListText,
  check(key, v) {
    if (!Array.isArray(v) || v.length !== 2 || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) throw optionTypeError(key, 'a pair of numbers', v);
    return [v[0], v[1]];
  },
};

const INT_LIST: Rule<number[] | null> = {
  want: 'a list of integers', form: 'value',
  fromText: numberListText,
  check(key, v) {
    if (v === null) return null;
    const a = typeof v === 'number' ? [v] : v;
    if (!Array.isArray(a) || !a.every((x) => Number.isInteger(x))) throw optionTypeError(key, 'a list of integers', v);
    return a as number[];
  },
};

const RESUME: Rule<boolean | string> = {
  want: 'true, false or a checkpoint path', form: 'value', fromText: booleanText,
  check(key, v) {
    if (typeof v === 'boolean') return v;
    if (typeof v === 'string' && v !== '') return v;
    throw optionTypeError(key, 'true, false or a checkpoint path', v);
  },
};

const PRETRAINED: Rule<boolean | string | null> = {
  want: 'true, false or a weights path', form: 'value', fromText: (t) => (/^(true|false)$/i.test(t) ? /^true$/i.test(t) : t),
  check(key, v) {
    if (v === null || typeof v === 'boolean' || (typeof v === 'string' && v !== '')) return v;
    throw optionTypeError(key, 'true, false or a weights path', v);
  },
};

const CACHE: Rule<boolean | 'ram' | 'disk'> = {
  want: "false, 'ram' or 'disk'", form: 'value', fromText: (t) => (/^(true|false)$/i.test(t) ? (/^true$/i.test(t) ? 'ram' : false) : t),
  check(key, v) {
    if (typeof v === 'boolean' || v === 'ram' || v === 'disk') return v;
    throw optionTypeError(key, "false, 'ram' or 'disk'", v);
  },
};

const MULTIPLE_OF_32 = integer({ min: 32 });
const IMGSZ_32: Rule<number> = {
  ...MULTIPLE_OF_32,
  want: 'a positive multiple of 32',
  check(key, v) {
    const n = integer().check(key, v);
    if (n < 32 || n % 32 !== 0) throw optionRangeError(key, 'a positive multiple of 32', n);
    return n;
  },
};

/** Each field's rule (type and range); resolveTrainConfig reads every value through it. */
const RULES: { readonly [K in keyof TrainConfig]: Rule<TrainConfig[K]> } = {
  data: STRING, epochs: integer({ min: 1 }), batch: integer({ min: 1, also: { value: -1, meaning: 'auto-batch' } }), imgsz: IMGSZ_32,
  lr0: number({ min: 0, minOpen: true }), optimizer: choice(['sgd', 'adam', 'adamw'], { anyCase: true }), device: STRING,
  workers: integer({ min: 0 }), seed: integer(), project: STRING, name: STRING, exist_ok: boolean(), resume: RESUME, amp: boolean(),
  patience: integer({ min: 0 }), allow_download_scripts: boolean(), pretrained: PRETRAINED,
  momentum: number({ min: 0, max: 1, maxOpen: true }), weight_decay: number({ min: 0 }), nesterov: boolean(),
  scheduler: choice(['linear', 'cos', 'warmcos'], { anyCase: true }), warmup_epochs: number({ min: 0 }), warmup_lr_start: number({ min: 0 }),
  min_lr_ratio: number({ min: 0 }), no_aug_epochs: integer({ min: 0 }),
  mosaic_prob: fraction(), mixup_prob: fraction(), hsv_prob: fraction(), flip_prob: fraction(),
  degrees: number(), translate: number(), shear: number(), mosaic_scale: PAIR, mixup_scale: PAIR, ema: boolean(),
  ema_decay: number({ min: 0, max: 1, minOpen: true, maxOpen: true }), ema_restart_decay: nullable(number({ min: 0, max: 1, minOpen: true, maxOpen: true })),
  ema_tau: number({ min: 0, minOpen: true }),
  aug_stop_epoch_ratio: fraction(), multi_scale: boolean(), expanded_scales: boolean(), lr_drop: nullable(integer({ min: 0 })), crop_resize_prob: fraction(), save_period: integer({ min: 0 }), eval_interval: integer({ min: 1 }),
  save_plots: boolean(), cache: CACHE, freeze: INT_LIST, nbs: nullable(integer({ min: 1 })), sync_bn: boolean(), log_interval: integer({ min: 1 }),
  data_dir: nullable(STRING), max_labels: integer({ min: 1 }), clip_max_norm: number({ min: 0 }),
  profile: boolean(), profile_then_stop: boolean(), profile_warmup: integer({ min: 0 }), profile_steps: integer({ min: 1 }), profile_trace: boolean(),
  profile_open: boolean(), threads: nullable(integer({ min: 1 })), verbose: boolean(),
};

const isTrainKey = (k: string): k is keyof TrainConfig => Object.hasOwn(RULES, k);

/** One training option checked by its rule, text (YAML, the command line) read as the rule's type. */
export function checkTrainOption<K extends keyof TrainConfig>(key: K, v: unknown): TrainConfig[K] {
  const rule: Rule<TrainConfig[K]> = RULES[key];
  return rule.check(key, fromCli(rule, v));
}

/** How the command line takes a field: a flag (`--ema`, `ema=false`) or a value (`cache=ram`, `resume=<path>`). */
export function trainOptionForm(key: keyof TrainConfig): 'flag' | 'value' {
  return RULES[key].form;
}

/** Whether the original holds `key` as a float (or a pair of floats): checkpoints write it as one. */
export function isFloatField(key: string): boolean {
  return isTrainKey(key) && RULES[key].float === true;
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
  expanded_scales: 'expanded_scales=false is not supported: the multi-scale set is always (S/32 + o)·32 for o = -5..5. Remove expanded_scales.',
};

/**
 * Fields that change nothing here and in the original alike, with what to say when one is set:
 * accepted so LibreYOLO scripts run, never silently.
 */
const NO_EFFECT: Partial<Record<keyof typeof TRAIN_DEFAULTS, string>> = {
  sync_bn: 'sync_bn has no effect on one device: the original converts BatchNorm to SyncBatchNorm only in multi-GPU (DDP) training, ' +
    'and this package trains on one device.',
};

function typeError(key: string, want: string, v: unknown): LibreYOLOError {
  return optionTypeError(key, want, v);
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
  for (const [key, v] of Object.entries(normalizeKeys(merged, isTrainKey))) {
    const refusal = NOT_SUPPORTED_KEYS[key];
    if (refusal) throw new LibreYOLOError('config_unsupported', refusal);
    if (!isTrainKey(key)) {
      warn(`train: unknown argument '${key}' is ignored.`);
      continue;
    }
    out[key] = checkTrainOption(key, v);
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
