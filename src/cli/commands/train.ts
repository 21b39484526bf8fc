/**
 * `libreyolo train data=... model=... epochs=... batch=... imgsz=... device=... workers=... seed=...
 * project=... name=...` (key=value or --flag style). Every training config field is accepted as an
 * option; values are checked by the trainer's config resolution. `model=<family><size>` (yolo9t,
 * yoloxn, ...) starts from fresh weights; anything else is loaded like `LibreYOLO()` does.
 */
import { Command, Option } from 'commander';
import { loadForTraining } from '../../load.ts';
import { listFamilies } from '../../models/index.ts';
import { TRAIN_DEFAULTS, type TrainConfig } from '../../train/config.ts';
import { trainModel, type TrainOptions } from '../../train/trainer.ts';
import { DEFAULT_PREDICT_MODEL } from './predict.ts';

/** `yolo9t, yolo9s, ...; yoloxn, ...`: the fresh-model names of every trainable family. */
function freshNames(): string {
  return listFamilies().filter((f) => f.train).map((f) => f.sizes.map((s) => `${f.name}${s}`).join('/')).join(', ');
}

const HELP: Partial<Record<keyof TrainConfig, string>> = {
  data: 'dataset YAML path or built-in name (coco8, coco128)',
  epochs: 'number of epochs (300)',
  batch: 'batch size (16; -1 = auto-batch)',
  imgsz: 'square train/val size (640)',
  lr0: 'initial learning rate (0.01)',
  optimizer: 'sgd | adam | adamw (sgd)',
  device: 'cpu, 0 / cuda:0, webgpu (default: cpu)',
  workers: 'data loader worker threads (8)',
  seed: 'random seed (0)',
  project: 'output root (runs/train)',
  name: 'run name (yolo9_exp; yolo9_exp2, ... when it exists)',
  resume: 'resume from a weights/last.pt (resume=<path>, or resume with model=<last.pt>)',
  amp: 'mixed precision on GPU providers (ignored on CPU)',
  eval_interval: 'validate every N epochs (10)',
  threads: 'ONNX Runtime threads for the train step (default: all cores)',
  patience: 'stop after this many validation rounds without a better mAP50-95; 0 = never (50)',
  pretrained: 'true: start from the published weights of the same size; or a weights path or name',
  sync_bn: 'no effect on one device, as in the original (warns)',
  data_dir: 'instead of data: a dataset root with images/train, labels/train (and images/val), classes from the model',
  allow_download_scripts: 'not supported: YAML Python download scripts never run (true is refused)',
  freeze: 'not supported: every layer is trained (refused)',
  cache: 'not supported: images are decoded every epoch (refused)',
};

function flagName(key: string): string {
  return key.replace(/_/g, '-');
}

export function trainCommand(): Command {
  const cmd = new Command('train')
    .description(`Train a detector on a YOLO-format dataset (key=value or --flag style). Trainable families: ${listFamilies().filter((f) => f.train).map((f) => f.displayName).join(', ')}.`)
    .option('--model <weights>', `weights to start from: a path, a published name, or ${freshNames()} for fresh weights`, DEFAULT_PREDICT_MODEL)
    .option('--cfg <yaml>', 'YAML of training arguments (explicit arguments win)');
  for (const [key, def] of Object.entries({ data: undefined, ...TRAIN_DEFAULTS }) as Array<[keyof TrainConfig, unknown]>) {
    const flag = flagName(key);
    const help = HELP[key] ?? `training config field ${key}${def === undefined || def === null ? '' : ` (${JSON.stringify(def)})`}`;
    if (typeof def === 'boolean' && key !== 'resume') {
      cmd.option(`--${flag}`, help);
      cmd.addOption(new Option(`--no-${flag}`).hideHelp());
    } else if (key === 'resume') {
      cmd.option(`--${flag} [path]`, help);
    } else {
      cmd.option(`--${flag} <value>`, help);
    }
  }
  cmd.addOption(new Option('--json', 'print the results as one JSON object on stdout').default(false));
  cmd.action(async (flags: Record<string, unknown>) => {
    const json = flags.json === true;
    const options: TrainOptions = {};
    for (const key of ['data', ...Object.keys(TRAIN_DEFAULTS)]) {
      // commander files `--no-aug-epochs <n>` under `augEpochs` (it strips a leading `no-`), which
      // holds `true` when the option is not given
      const negated = key.startsWith('no_');
      const camel = key.replace(/^no_/, '').replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
      const v = flags[camel];
      if (v !== undefined && !(negated && v === true)) options[key] = v;
    }
    if (typeof flags.cfg === 'string') options.cfg = flags.cfg;
    const modelName = String(flags.model);
    const device = typeof options.device === 'string' && options.device !== '' ? options.device : 'cpu';
    const resumeLast = typeof options.resume === 'string' && options.resume !== 'true' && options.resume !== 'false' ? options.resume : null;
    const model = await loadForTraining(resumeLast ?? modelName, { device });
    try {
      const results = await trainModel(model, options);
      if (json) {
        process.stdout.write(`${JSON.stringify({ schema_version: 1, ...results })}\n`);
        return;
      }
      process.stdout.write(`Results saved to ${results.save_dir}\n`);
      if (results.best_checkpoint) process.stdout.write(`best: ${results.best_checkpoint} (mAP50-95 ${results.best_mAP50_95.toFixed(4)}, mAP50 ${results.best_mAP50.toFixed(4)}, epoch ${results.best_epoch})\n`);
      if (results.last_checkpoint) process.stdout.write(`last: ${results.last_checkpoint}\n`);
    } finally {
      await model.close();
    }
  });
  return cmd;
}
