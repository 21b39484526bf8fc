/**
 * Setting up a training run, before its first epoch: the batch=-1 probe, the data loader running
 * the family's augmentation recipe, the optimizer with its parameter groups, the LR schedule, the
 * EMA, the resumed optimizer / EMA / best state or a new run directory, results.csv and
 * train_config.yaml, the profiler when `profile=true`, and the step runner with its first session.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LibreYOLOError } from '../errors.ts';
import type { Parameter } from '../graph/module.ts';
import { BASE_RECIPE } from '../data/recipe.ts';
import type { DatasetConfig } from '../data/dataset.ts';
import { inputSpec, type DetectionNetwork, type ModelFamily, type TrainingHooks } from '../models/registry.ts';
import type { Device } from '../runtime/device.ts';
import type { Warn } from '../util/warn.ts';
import { makeRunDir, ResultsCsv, writeYaml } from './artifacts.ts';
import { probeAutoBatch, type AutoBatchResult } from './autobatch.ts';
import { NO_BEST, type BestState, type ResumeState } from './checkpoint.ts';
import { accumulateSteps, isFloatField, type TrainConfig } from './config.ts';
import { openTrainData, type TrainData } from './data.ts';
import { ModelEMA } from './ema.ts';
import { Optimizer } from './optimizer.ts';
import type { TrainRuntime } from './prepare.ts';
import type { TrainProfiler } from './profiler-port.ts';
import { EpochProgress } from './progress.ts';
import { multiScaleSampler, type MultiScaleSampler } from './multi-scale.ts';
import { openStepRunner, type StepRunner } from './runner.ts';
import { OPTIMIZE_MIN_STEPS, trainOptimizationLevel } from './step.ts';
import { LRSchedule } from './schedule.ts';

/**
 * What a run opens and keeps. `setupTraining` fills it in order, so whatever a setup that fails
 * half-way has opened (loader, profiler, runner) is still there to be closed.
 */
export class TrainState {
  optimizer!: Optimizer;
  schedule!: { lr(step: number): number };
  ema: ModelEMA | null = null;
  best: BestState = { ...NO_BEST };
  startEpoch = 0;
  globalStep = 0;
  saveDir = '';
  csv!: ResultsCsv;
  data: TrainData | null = null;
  runner: StepRunner | null = null;
  profiler: TrainProfiler | null = null;
  progress!: EpochProgress;
  accumulate = 1;
  /** Seconds already trained before a resume (results.csv `time` continues from it). */
  timeOffset = 0;
  /** The batch=-1 probe, when one ran. */
  autoBatch: AutoBatchResult | null = null;
  /** multi_scale=true: the per-batch side draws. */
  multiScale: MultiScaleSampler | null = null;
}

/** What setting up reads of the run. */
export interface TrainSetup {
  config: TrainConfig;
  family: ModelFamily;
  network: DetectionNetwork;
  device: Device;
  hooks: TrainingHooks;
  warn: Warn;
  runtime: TrainRuntime;
  datasetConfig: DatasetConfig;
  resume: ResumeState | null;
  /** `yolo9-t`, for logs and the profile's meta. */
  modelName: string;
}

/** amp runs only on GPU providers (ignored on CPU, as the original). */
export function ampActive(cfg: TrainConfig, device: Device): boolean {
  return cfg.amp && device.kind !== 'cpu';
}

/**
 * The profile window a run with `accumulate` batches per optimizer step measures: warm-up and steps
 * each rounded up to whole accumulation windows, so every measured step ends on an optimizer step.
 */
export function profileWindow(warmup: number, steps: number, accumulate: number): { warmup: number; steps: number } {
  if (accumulate <= 1) return { warmup, steps };
  return { warmup: Math.ceil(warmup / accumulate) * accumulate, steps: Math.ceil(steps / accumulate) * accumulate };
}

/** Sets the run up into `s` (see TrainState); `cfg.batch` is replaced by the probe's when it is -1. */
export async function setupTraining(s: TrainState, run: TrainSetup): Promise<void> {
  const log = (line: string): void => s.progress.line(line);
  const named = (): Array<[string, Parameter]> => [...run.network.namedTensors()];
  const { config: cfg, family, network, device, hooks, warn, runtime } = run;
  const cwd = runtime.cwd ?? process.cwd();
  s.progress = new EpochProgress({ enabled: cfg.verbose, logInterval: cfg.log_interval, ...(runtime.stream ? { stream: runtime.stream } : {}) });
  s.multiScale = multiScaleSampler(cfg, family, hooks, network);
  if (cfg.batch === -1) {
    // multi_scale: the batch must fit at the largest side it may draw.
    const side = s.multiScale ? Math.max(...s.multiScale.distinct) : cfg.imgsz;
    const auto = await probeAutoBatch(family, network, {
      device, imgsz: side, maxTargets: cfg.max_labels, nbs: cfg.nbs, log,
      ...(cfg.threads ? { threads: cfg.threads } : {}),
    });
    cfg.batch = auto.batch;
    s.autoBatch = auto;
    log(auto.message);
  }
  if (cfg.amp && !ampActive(cfg, device)) log('amp=true is ignored on CPU: training runs in float32.');
  else if (cfg.amp) log(`amp=true: mixed precision on ${device.id} (float16 network and gradients, float32 loss and BatchNorm, dynamic loss scaling).`);

  s.accumulate = accumulateSteps(cfg);
  s.data = await openTrainData(cfg, run.datasetConfig, {
    cwd, warn, recipe: hooks.augment ?? BASE_RECIPE, stretch: inputSpec(family).resize === 'stretch',
    ...(hooks.maskRatio?.(network) ? { masks: hooks.maskRatio(network)! } : {}),
    ...(hooks.unresizedSamples ? { preResize: false } : {}),
  });
  const batchesPerEpoch = s.data!.batchesPerEpoch;
  const stepsPerEpoch = Math.ceil(batchesPerEpoch / s.accumulate);
  const layout = hooks.paramGroups ? (keys: string[]) => hooks.paramGroups!(keys, { weightDecay: cfg.weight_decay, lr0: cfg.lr0 }, network) : undefined;
  s.optimizer = Optimizer.create(named(), { optimizer: cfg.optimizer, lr0: cfg.lr0, momentum: cfg.momentum, weightDecay: cfg.weight_decay, nesterov: cfg.nesterov }, layout);
  const sched = {
    lr0: cfg.lr0, epochs: cfg.epochs, stepsPerEpoch,
    warmupEpochs: cfg.warmup_epochs, warmupLrStart: cfg.warmup_lr_start, minLrRatio: cfg.min_lr_ratio, noAugEpochs: cfg.no_aug_epochs,
    lrDrop: cfg.lr_drop,
  };
  if (hooks.schedule && !hooks.scheduleTakesLrDrop && cfg.lr_drop !== null) {
    throw new LibreYOLOError('config_unsupported', `train: lr_drop is not supported by ${family.name}'s own LR schedule. Remove lr_drop.`);
  }
  s.schedule = hooks.schedule?.(sched) ?? new LRSchedule({ scheduler: cfg.scheduler, ...sched });
  if (cfg.ema) s.ema = new ModelEMA(named(), cfg.ema_decay, cfg.ema_tau);

  const resume = run.resume;
  if (resume) {
    s.optimizer.loadStateDict(resume.optimizer);
    if (s.ema && resume.ema) s.ema.load(resume.ema, resume.emaUpdates);
    s.startEpoch = resume.epoch + 1;
    s.best = { ...resume.best };
    if (s.startEpoch >= cfg.epochs) {
      throw new LibreYOLOError('config_conflict', `Cannot resume: the checkpoint finished epoch ${resume.epoch + 1} of ${cfg.epochs}; pass a larger epochs= to train further.`);
    }
  } else {
    s.saveDir = await makeRunDir(cfg.project, cfg.name, cfg.exist_ok, cwd);
  }
  s.globalStep = s.startEpoch * stepsPerEpoch;
  // As the original's _initialize_scheduler_lr: the first step of a run (or of a resumed run) takes
  // the schedule's LR in every group, without the group multipliers (D-FINE's backbone x0.5 too)
  // unless the family's groups start at their own LRs (firstLrScaled); every later step gets
  // lr(k) x multiplier.
  s.optimizer.setLr(s.schedule.lr(s.globalStep), { multipliers: hooks.firstLrScaled ?? false });
  s.csv = new ResultsCsv(join(s.saveDir, 'results.csv'));
  if (resume && existsSync(s.csv.path)) {
    s.csv.load(readFileSync(s.csv.path, 'utf8'));
    // `time` keeps counting from where the resumed run stopped
    s.timeOffset = Number(s.csv.lastValue('time')) || 0;
  }
  if (cfg.save_plots) warn('save_plots: plots are not produced by this package; the final-epoch validation still runs.');
  await writeYaml(join(s.saveDir, 'train_config.yaml'), { ...cfg }, isFloatField);

  if (cfg.profile) {
    const { warmup, steps } = profileWindow(cfg.profile_warmup, cfg.profile_steps, s.accumulate);
    if (s.accumulate > 1) log(`profile window rounded to accumulation boundaries (warmup=${warmup}, steps=${steps}, accum=${s.accumulate})`);
    const factory = runtime.profiler;
    if (!factory) throw new LibreYOLOError('config_unsupported', 'profile=true needs a training profiler: train through model.train(), which brings one.');
    s.profiler = await factory({
      saveDir: s.saveDir, device, warmup, steps, trace: cfg.profile_trace, log,
      meta: { model: run.modelName, device: device.id, batch: cfg.batch, imgsz: cfg.imgsz, amp: cfg.amp, amp_dtype: 'float16', workers: cfg.workers },
    });
  }
  const prefix = s.profiler?.ortProfilePrefix;
  const planned = (cfg.epochs - s.startEpoch) * batchesPerEpoch;
  const [first, ...more] = s.multiScale?.distinct ?? [cfg.imgsz];
  s.runner = await openStepRunner(family, network, {
    device, ...(cfg.threads ? { threads: cfg.threads } : {}), imgsz: [first!, first!], maxTargets: cfg.max_labels,
    ...(more.length ? { sizes: more.map((side) => [side, side] as const) } : {}),
    amp: ampActive(cfg, device), seed: cfg.seed,
    optimizationLevel: trainOptimizationLevel(planned, cfg.profile),
    ...(prefix ? { profileFilePrefix: prefix } : {}),
  });
  s.profiler?.attach?.(s.runner);
  // The first step's session is built here (a while), so epoch 1's timing and the profile see plain steps.
  const firstBatch = Math.min(cfg.batch, s.data!.trainImages);
  const t0 = performance.now();
  await s.runner!.prepare(firstBatch);
  const step = s.runner!.steps.get(firstBatch);
  const graph = step?.options.optimizationLevel === 'disabled'
    ? `graph as built: ${planned} steps planned, optimised from ${OPTIMIZE_MIN_STEPS}`
    : `graph optimised${step?.sessionCache === 'hit' ? ', from the cache' : ''}`;
  const sides = s.multiScale ? `multi-scale ${s.multiScale.distinct.slice().sort((a, b) => a - b).join('/')} in one session` : `${cfg.imgsz}x${cfg.imgsz}`;
  log(`Train step ready (batch ${firstBatch}, ${sides}) in ${((performance.now() - t0) / 1000).toFixed(1)}s (${graph})`);

  const params = s.optimizer.numel;
  log(`Training ${run.modelName} (${params.toLocaleString('en-US')} parameters, ${network.nc} classes) on ${device.id}` +
    ` with ${s.data!.trainImages} images, batch ${cfg.batch}${s.accumulate > 1 ? ` x ${s.accumulate} accumulated` : ''}, imgsz ${cfg.imgsz},` +
    ` ${cfg.optimizer} lr0=${cfg.lr0}, ${cfg.epochs} epoch${cfg.epochs === 1 ? '' : 's'}${s.startEpoch ? ` (resuming at epoch ${s.startEpoch + 1})` : ''}; results in ${s.saveDir}`);
}
