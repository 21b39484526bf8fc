/**
 * What a training run starts from: the resolved config (a resumed run's checkpoint config under the
 * explicit options), the dataset config, the device, and the network to train, a copy of the model's
 * with class layers for the dataset's class count, `pretrained=` weights transferred into it, or
 * the resumed checkpoint's raw weights.
 */
import { dirname, resolve } from 'node:path';
import { LibreYOLOError } from '../errors.ts';
import { loadStateDict, snapshot, stateDictOf } from '../graph/state-dict.ts';
import type { DatasetConfig } from '../data/dataset.ts';
import { BASE_RECIPE, ignoredAugmentOptions } from '../data/recipe.ts';
import { resolveWeights } from '../models/hub.ts';
import { trainingHooks, type DetectionNetwork, type ModelFamily } from '../models/registry.ts';
import { parseDevice, type Device } from '../runtime/device.ts';
import { defaultWarn, type Warn } from '../util/warn.ts';
import { loadCheckpointFile } from '../weights/checkpoint.ts';
import { readTrainingCheckpoint, type ResumeState } from './checkpoint.ts';
import { TRAIN_DEFAULTS, checkTrainOption, resolveTrainConfig, type TrainConfig } from './config.ts';
import { loadTrainDataConfig } from './data.ts';
import type { TrainProfilerFactory } from './profiler-port.ts';

/** Options of `trainModel` / `model.train()`: any TrainConfig field (snake_case or camelCase), plus `cfg`. */
export type TrainOptions = Partial<TrainConfig> & { cfg?: string } & Record<string, unknown>;

/** What training reads of a model (the `LibreYOLOModel` facade is one); the model itself is not changed. */
export interface TrainSource {
  readonly family: ModelFamily;
  readonly size: string;
  /** The network whose weights training starts from; null for an exported .onnx (refused). */
  readonly network: DetectionNetwork | null;
  readonly names: Record<number, string>;
  /** The default device (`device=` overrides it). */
  readonly device: Device;
  /** The training checkpoint `resume=true` continues. */
  readonly weightsPath: string | null;
  /** The model's task: `detect` (default), or `segment` for a family whose hooks train masks. */
  readonly task?: string;
}

export interface TrainRuntime {
  warn?: Warn;
  /** Where progress goes (default process.stderr). */
  stream?: NodeJS.WriteStream;
  /** Directory that relative project/data paths are resolved against (default cwd). */
  cwd?: string;
  /** Builds the profiler once the run directory and meta are known; `profile=true` needs one (`model.train()` passes it). */
  profiler?: TrainProfilerFactory;
}


/** A run resolved and its network built, before anything is opened. */
export interface PreparedTraining {
  config: TrainConfig;
  family: ModelFamily;
  size: string;
  network: DetectionNetwork;
  device: Device;
  /** The dataset's classes. */
  names: Record<number, string>;
  datasetConfig: DatasetConfig;
  /** The checkpoint a resumed run continues (null for a new run). */
  resume: ResumeState | null;
  /** A resumed run's directory (a new run makes its own once set up). */
  saveDir: string | null;
}

/** Resolves the run and builds the network to train; the model passed in is not changed. */
export async function prepareTraining(model: TrainSource, options: TrainOptions, runtime: TrainRuntime = {}): Promise<PreparedTraining> {
  const warn = runtime.warn ?? defaultWarn;
  const cwd = runtime.cwd ?? process.cwd();
  if (!model.network) throw new LibreYOLOError('config_unsupported', 'Cannot train an exported ONNX model: load the .pt checkpoint instead.');
  const task = model.task ?? 'detect';
  const family = model.family;
  const hooks = trainingHooks(family);
  if (task !== 'detect' && !(task === 'segment' && hooks.maskRatio?.(model.network))) {
    throw new LibreYOLOError('config_unsupported', `Training ${task} models is not implemented yet for ${family.displayName}; it trains ${hooks.maskRatio ? 'detect and segment' : 'detect'} models.`);
  }
  // Resume: the checkpoint's config is the base, explicit options win (except resume itself).
  let resume: ResumeState | null = null;
  let resumePath: string | null = null;
  // Read by its rule first (as every option is in resolveTrainConfig): '' is refused, 'false' is false.
  const resumeOpt = options.resume === undefined ? undefined : checkTrainOption('resume', options.resume);
  if (resumeOpt !== undefined && resumeOpt !== false && resumeOpt !== 'false') {
    resumePath = typeof resumeOpt === 'string' && resumeOpt !== 'true' ? resolve(cwd, resumeOpt) : model.weightsPath;
    if (!resumePath) throw new LibreYOLOError('checkpoint_not_found', 'resume=true needs a model loaded from a training checkpoint (weights/last.pt), or resume=<path>.');
    resume = await readTrainingCheckpoint(resumePath);
  }
  const base: Record<string, unknown> = resume ? { ...resume.config } : {};
  if (resume) {
    for (const k of ['resume', 'cfg']) delete base[k];
  }
  const config = resolveTrainConfig({ ...base, ...options, ...(resume ? { resume: resumePath } : {}) }, warn, hooks.defaults);
  const recipe = hooks.augment ?? BASE_RECIPE;
  const defaults: Record<string, unknown> = { ...TRAIN_DEFAULTS, ...hooks.defaults };
  const ignored = ignoredAugmentOptions(recipe, (n) => (config as unknown as Record<string, unknown>)[n], (n) => defaults[n]);
  if (ignored.length) {
    throw new LibreYOLOError('config_unsupported', `train: ${ignored.join(', ')} ${ignored.length > 1 ? 'are' : 'is'} not used by ${family.displayName}'s augmentation (its steps: ${recipe.map((s) => s.step).join(', ')}); leave ${ignored.length > 1 ? 'them' : 'it'} out.`);
  }

  const device = parseDevice(config.device === '' ? model.device.id : config.device);
  const dataCfg = await loadTrainDataConfig(config, { cwd, warn, names: model.names });
  const names = dataCfg.names;
  const nc = Object.keys(names).length;

  // The network to train: a copy of the model's, with class layers for the dataset's nc.
  let network: DetectionNetwork;
  if (resume) {
    network = family.create({ size: model.size, stateDict: resume.trainModel, task });
    if (network.nc !== nc) throw new LibreYOLOError('config_conflict', `Cannot resume: the checkpoint has ${network.nc} classes, the dataset ${nc}.`);
  } else {
    const sd = snapshot(stateDictOf(model.network));
    network = hooks.adaptClasses(sd, model.size, nc, config.seed);
    if (config.pretrained) {
      const src = config.pretrained === true ? `${family.filenamePrefix}${model.size}.pt` : config.pretrained;
      const path = await resolveWeights(src, { cwd });
      const { copied } = loadStateDict(network, (await loadCheckpointFile(path)).stateDict);
      warn(`pretrained: transferred ${copied} tensors from ${path}.`);
    }
  }
  if (!resume) hooks.onSetup?.(network);
  return {
    config, family, size: model.size, network, device, names, datasetConfig: dataCfg, resume,
    saveDir: resume && resumePath ? dirname(dirname(resumePath)) : null,
  };
}
