/**
 * `libreyolo train data=... model=... epochs=... batch=... imgsz=... device=... workers=... seed=...
 * project=... name=...` (key=value or --flag style). Every training config field is accepted as an
 * option; values are checked by the trainer's config resolution. `model=<family><size>` (yolo9t,
 * yoloxn, ...) starts from fresh weights; anything else is loaded like `LibreYOLO()` does.
 */
import { Command, Option } from 'commander';
import { isDeepStrictEqual } from 'node:util';
import { listFamilies } from '../../models/index.ts';
import { checkTrainOption, TRAIN_DEFAULTS, trainOptionForm, type TrainConfig } from '../../train/config.ts';
import { lazyAction } from '../lazy-action.ts';
import { DEFAULT_PREDICT_MODEL } from './predict.ts';

/** `yolo9t, yolo9s, ...; yoloxn, ...`: the fresh-model names of every trainable family. */
function freshNames(): string {
  return listFamilies().filter((f) => f.train).map((f) => f.sizes.map((s) => `${f.name}${s}`).join('/')).join(', ');
}

/** One line of meaning per training option; the default (the core's, and each family's own) is added from the tables. */
const MEANING: Record<keyof TrainConfig, string> = {
  data: 'dataset YAML path or built-in name (coco8, coco128)',
  epochs: 'number of training epochs',
  batch: 'images per optimizer step (-1 = auto-batch)',
  imgsz: 'square train/val input size',
  lr0: 'initial learning rate',
  optimizer: 'sgd | adam | adamw',
  device: "cpu, 0 / cuda:0, webgpu ('' = the model's device, cpu)",
  workers: 'data loader worker threads',
  seed: 'random seed (weights, sampling, augmentation)',
  project: 'output root',
  name: 'run name (name2, name3, ... when it exists)',
  exist_ok: 'reuse an existing run folder instead of numbering a new one',
  resume: 'resume from a weights/last.pt (resume=<path>, or resume with model=<last.pt>)',
  amp: 'mixed precision on GPU providers (no effect on CPU)',
  patience: 'stop after this many validations without a better mAP50-95; 0 = never',
  allow_download_scripts: 'not supported: YAML Python download scripts never run (true is refused)',
  pretrained: 'true: start from the published weights of the same size; or a weights path or name',
  momentum: 'SGD momentum / Adam beta1',
  weight_decay: 'L2 weight decay (not on biases and norms)',
  nesterov: 'Nesterov momentum for SGD',
  scheduler: 'learning-rate schedule: linear | cos | warmcos',
  warmup_epochs: 'epochs of learning-rate (and momentum) warm-up',
  warmup_lr_start: 'learning rate at the start of warm-up',
  min_lr_ratio: 'final learning rate as a fraction of lr0',
  no_aug_epochs: 'last epochs trained without mosaic/mixup (close-mosaic)',
  mosaic_prob: 'probability of a 4-image mosaic per sample',
  mixup_prob: 'probability of mixing two samples',
  hsv_prob: 'probability of hue/saturation/value jitter',
  flip_prob: 'probability of a horizontal flip',
  degrees: 'random rotation range, degrees',
  translate: 'random translation, fraction of the size',
  shear: 'random shear range, degrees',
  mosaic_scale: 'random scale range of the mosaic, [min,max]',
  mixup_scale: 'random scale range of the mixed-in image, [min,max]',
  ema: 'keep an exponential moving average of the weights (validated and saved)',
  ema_decay: 'EMA decay',
  ema_tau: 'EMA warm-up: decay x (1 - exp(-updates / ema_tau))',
  ema_restart_decay: 'constant EMA decay from the no-aug epochs on (null = no switch)',
  aug_stop_epoch_ratio: 'strong augmentation stops at epoch int(epochs x this)',
  multi_scale: 'per-batch random input size: not implemented (only false)',
  expanded_scales: "RF-DETR's multi-scale set (S/32 + o)x32, o = -5..5 (only true)",
  lr_drop: 'LR x0.1 from this epoch on (null = never)',
  crop_resize_prob: "RF-DETR's random resize (shortest side 400/500/600) + square crop probability",
  save_period: 'also save weights/epoch_<n>.pt every N epochs; 0 = never',
  eval_interval: 'validate every N epochs (and always on the final epoch)',
  save_plots: 'plots are not drawn here (warns); the final-epoch validation runs either way',
  cache: 'not supported: images are decoded every epoch (refused)',
  freeze: 'not supported: every layer is trained (refused)',
  nbs: 'nominal batch: accumulate gradients over round(nbs/batch) steps (null = none)',
  sync_bn: 'no effect on one device, as in the original (warns)',
  log_interval: 'log a progress line every N steps',
  data_dir: 'instead of data: a dataset root with images/train, labels/train (and images/val), classes from the model',
  max_labels: 'most boxes kept per image after augmentation',
  clip_max_norm: 'clip the global gradient L2 norm to this; 0 = off',
  profile: 'profile a window of training steps into the run folder',
  profile_then_stop: 'stop training once the profile window is written',
  profile_warmup: 'steps before the profile window',
  profile_steps: 'steps in the profile window',
  profile_trace: 'write the merged Chrome trace with the profile',
  profile_open: 'open timeline.html when the profile is written (where a browser is available)',
  threads: 'ONNX Runtime threads for the train step',
  verbose: 'progress bar and epoch lines on stderr',
};

const show = (v: unknown): string => (typeof v === 'string' ? (v === '' ? "''" : v) : JSON.stringify(v));

/** `(default 15; YOLOX 15, D-FINE 4)`: the core's default, then each trainable family that changes it. */
function defaultsNote(key: keyof TrainConfig): string {
  if (key === 'data') return '';
  const core: unknown = TRAIN_DEFAULTS[key];
  const own = listFamilies()
    .filter((f) => f.train && key in f.train.defaults && !isDeepStrictEqual(f.train.defaults[key], core))
    .map((f) => `${f.displayName} ${show(f.train!.defaults[key])}`);
  // A null default means "decided at run time" for the few keys whose meaning says how.
  const base = key === 'threads' ? 'all cores' : core === null || core === undefined ? 'none' : show(core);
  return ` (default ${base}${own.length ? `; ${own.join(', ')}` : ''})`;
}

/**
 * A flag's text checked by its field's rule as it is parsed (so a mistake fails before any model
 * loads, with the library's message), and passed on as typed: the config resolution reads it again.
 */
function checkedText(key: keyof TrainConfig): (text: string) => string {
  return (text) => {
    checkTrainOption(key, text);
    return text;
  };
}

function flagName(key: string): string {
  return key.replace(/_/g, '-');
}

export function trainCommand(): Command {
  const cmd = new Command('train')
    .description(`Train a detector on a YOLO-format dataset (key=value or --flag style). Trainable families: ${listFamilies().filter((f) => f.train).map((f) => f.displayName).join(', ')}.`)
    .option('--model <weights>', `weights to start from: a path, a published name, or ${freshNames()} for fresh weights`, DEFAULT_PREDICT_MODEL)
    .option('--cfg <yaml>', 'YAML of training arguments (explicit arguments win)');
  for (const key of ['data', ...Object.keys(TRAIN_DEFAULTS)] as Array<keyof TrainConfig>) {
    const flag = flagName(key);
    const help = `${MEANING[key]}${defaultsNote(key)}`;
    if (trainOptionForm(key) === 'flag') {
      cmd.option(`--${flag}`, help);
      cmd.addOption(new Option(`--no-${flag}`).hideHelp());
    } else if (key === 'resume') {
      cmd.option(`--${flag} [path]`, help, checkedText(key));
    } else {
      cmd.option(`--${flag} <value>`, help, checkedText(key));
    }
  }
  cmd.addOption(new Option('--json', 'print the results as one JSON object on stdout').default(false));
  cmd.action(lazyAction(async () => (await import('../actions/train.ts')).runTrain));
  return cmd;
}
