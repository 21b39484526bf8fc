/**
 * The training loop: epochs of forward + loss + backward on ONNX Runtime (one
 * session per step shape, `TrainStep`), the optimizer and LR schedule on the host, EMA of the
 * weights, gradient accumulation when the nominal batch `nbs` exceeds the micro-batch, close-mosaic
 * for the last `no_aug_epochs`, validation every `eval_interval` epochs and at the final one on the EMA weights, and the
 * run directory `runs/train/<name>[N]/` with `weights/last.pt`, `best.pt`, `epoch_<n>.pt`,
 * `results.csv`, `train_config.yaml` and `summary.json`.
 *
 * The network being trained is a copy: the model passed to `trainModel` keeps its weights and
 * sessions. After training, load `best_checkpoint` (or `last_checkpoint`) to use the result.
 */
import { existsSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { LibreYOLOError } from '../errors.ts';
import type { Parameter } from '../graph/module.ts';
import { applyRunningStats, loadStateDict, snapshot, stateDictOf } from '../graph/state-dict.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { inputSpec, trainingHooks, type DetectionNetwork, type ModelFamily, type TrainingHooks } from '../models/registry.ts';
import { EnginePredictor } from '../predict/engine-predictor.ts';
import { toNetworkLayout } from '../predict/preprocess.ts';
import { GraphEngine } from '../runtime/graph-engine.ts';
import { defaultWarn, type Warn } from '../util/warn.ts';
import { parseDevice, type Device } from '../runtime/device.ts';
import { loadCheckpointFile } from '../weights/checkpoint.ts';
import { resolveWeights } from '../models/hub.ts';
import { makeRunDir, ResultsCsv, writeJson, writeYaml, type CsvValue } from './artifacts.ts';
import { BEST_METRIC_KEY, NO_BEST, readTrainingCheckpoint, saveTrainingCheckpoint, type BestState, type ResumeState } from './checkpoint.ts';
import { probeAutoBatch, type AutoBatchResult } from './autobatch.ts';
import { accumulateSteps, checkTrainOption, isFloatField, resolveTrainConfig, type TrainConfig } from './config.ts';
import { ModelEMA } from './ema.ts';
import { clipGradNorm, Optimizer } from './optimizer.ts';
import { EpochProgress } from './progress.ts';
import { LRSchedule } from './schedule.ts';
import type { LossComponents, StepResult } from './types.ts';
import type { TrainBatch } from '../data/train-batch.ts';
import { BASE_RECIPE } from '../data/recipe.ts';
import { loadTrainDataConfig, openTrainData, type TrainData } from './data.ts';
import { openStepRunner, type StepRunner } from './runner.ts';
import type { TrainPhase, TrainProfiler, TrainProfilerFactory } from './profiler-port.ts';
import { validate } from '../val/validate.ts';
import type { DatasetConfig } from '../data/dataset.ts';

/** Validation metrics under the original's results.csv names (`metrics/mAP50-95`, `metrics/mAP50`, ...). */
export type ValMetrics = Record<string, number>;

/** Options of `trainModel` / `model.train()`: any TrainConfig field (snake_case or camelCase), plus `cfg`. */
export type TrainOptions = Partial<TrainConfig> & { cfg?: string } & Record<string, unknown>;

/** The original's results dict (returned, and stored in summary.json). */
export interface TrainResults {
  final_loss: number | null;
  epoch_losses: number[];
  epoch_lrs: number[];
  /** Per epoch: the mean of each logged loss component (YOLOv9 `{box, dfl, cls}`, weighted). */
  epoch_loss_items: Array<Record<string, number>>;
  /** Metrics of the last validation (null if none ran). */
  val_metrics: ValMetrics | null;
  /** Per validated epoch (1-based), its metrics. */
  epoch_metrics: Array<{ epoch: number } & ValMetrics>;
  best_mAP50: number;
  best_mAP50_95: number;
  best_epoch: number;
  save_dir: string;
  best_checkpoint: string | null;
  last_checkpoint: string | null;
}

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

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
}

/** Runs training for `model` (a loaded or fresh model of a trainable family). */
export async function trainModel(model: TrainSource, options: TrainOptions, runtime: TrainRuntime = {}): Promise<TrainResults> {
  const trainer = await Trainer.create(model, options, runtime);
  return trainer.run();
}

interface EpochStats {
  losses: LossComponents[];
  images: number;
}

export class Trainer {
  private optimizer!: Optimizer;
  private schedule!: { lr(step: number): number };
  private ema: ModelEMA | null = null;
  private best: BestState = { ...NO_BEST };
  private startEpoch = 0;
  private globalStep = 0;
  private saveDir = '';
  private csv!: ResultsCsv;
  private data: TrainData | null = null;
  private runner: StepRunner | null = null;
  private profiler: TrainProfiler | null = null;
  private progress!: EpochProgress;
  private accumulate = 1;
  /** amp: batches whose update was skipped because a float16 gradient overflowed. */
  private ampSkipped = 0;
  private badValidations = 0;
  private readonly warn: Warn;
  private readonly results: TrainResults;
  private startedAt = 0;
  /** Seconds already trained before a resume (results.csv `time` continues from it). */
  private timeOffset = 0;
  private resumeFrom: ResumeState | null = null;
  private datasetConfig!: DatasetConfig;
  /** The batch=-1 probe, when one ran. */
  autoBatch: AutoBatchResult | null = null;

  private readonly hooks: TrainingHooks;

  private constructor(
    readonly config: TrainConfig,
    readonly family: ModelFamily,
    readonly size: string,
    readonly network: DetectionNetwork,
    readonly device: Device,
    readonly names: Record<number, string>,
    private readonly runtime: TrainRuntime,
  ) {
    this.warn = runtime.warn ?? defaultWarn;
    this.hooks = trainingHooks(family);
    this.results = {
      final_loss: null, epoch_losses: [], epoch_lrs: [], epoch_loss_items: [], val_metrics: null, epoch_metrics: [],
      best_mAP50: 0, best_mAP50_95: 0, best_epoch: 0, save_dir: '', best_checkpoint: null, last_checkpoint: null,
    };
  }

  static async create(model: TrainSource, options: TrainOptions, runtime: TrainRuntime = {}): Promise<Trainer> {
    const warn = runtime.warn ?? defaultWarn;
    const cwd = runtime.cwd ?? process.cwd();
    if (!model.network) throw new LibreYOLOError('config_unsupported', 'Cannot train an exported ONNX model: load the .pt checkpoint instead.');
    const task = model.task ?? 'detect';
    const family = model.family;
    const hooks = trainingHooks(family);
    if (task !== 'detect' && !(task === 'segment' && hooks.maskRatio?.(model.network))) {
      throw new LibreYOLOError('config_unsupported', `Training ${task} models is not implemented yet for ${family.displayName}; this package trains detection models${hooks.maskRatio ? ' and YOLOv9-seg' : ''}.`);
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
    const trainer = new Trainer(config, family, model.size, network, device, names, runtime);
    trainer.datasetConfig = dataCfg;
    trainer.resumeFrom = resume;
    if (resume && resumePath) trainer.saveDir = dirname(dirname(resumePath));
    return trainer;
  }

  /** `yolo9-t`: the family and size in logs, profiles and summary.json. */
  private get modelName(): string {
    return `${this.family.name}-${this.size}`;
  }

  /** The logged components of the network trained (a segment head adds `seg`). */
  private get lossNames(): readonly string[] {
    return this.hooks.lossNamesFor?.(this.network) ?? this.hooks.lossNames;
  }

  /** Mask targets' downsample ratio when the network trains masks (segment heads), else null. */
  private get maskRatio(): number | null {
    return this.hooks.maskRatio?.(this.network) ?? null;
  }

  /** Per component of the family's loss, the mean over `losses`. */
  private meanComponents(losses: LossComponents[]): Record<string, number> {
    return Object.fromEntries(this.lossNames.map((k) => [k, mean(losses.map((x) => x[k]!))]));
  }

  /** amp runs only on GPU providers (ignored on CPU, as the original). */
  private ampActive(cfg: TrainConfig): boolean {
    return cfg.amp && this.device.kind !== 'cpu';
  }

  private log(line: string): void {
    this.progress.line(line);
  }

  private named(): Array<[string, Parameter]> {
    return [...this.network.namedTensors()];
  }

  private async setup(): Promise<void> {
    const cfg = this.config;
    const cwd = this.runtime.cwd ?? process.cwd();
    this.progress = new EpochProgress({ enabled: cfg.verbose, logInterval: cfg.log_interval, ...(this.runtime.stream ? { stream: this.runtime.stream } : {}) });
    if (cfg.batch === -1) {
      const auto = await probeAutoBatch(this.family, this.network, {
        device: this.device, imgsz: cfg.imgsz, maxTargets: cfg.max_labels, nbs: cfg.nbs, log: (l) => this.log(l),
        ...(cfg.threads ? { threads: cfg.threads } : {}),
      });
      cfg.batch = auto.batch;
      this.autoBatch = auto;
      this.log(auto.message);
    }
    if (cfg.amp && !this.ampActive(cfg)) this.log('amp=true is ignored on CPU: training runs in float32.');
    else if (cfg.amp) this.log(`amp=true: mixed precision on ${this.device.id} (float16 network and gradients, float32 loss and BatchNorm, dynamic loss scaling).`);

    this.accumulate = accumulateSteps(cfg);
    this.data = await openTrainData(cfg, this.datasetConfig, {
      cwd, warn: this.warn, recipe: this.hooks.augment ?? BASE_RECIPE, stretch: inputSpec(this.family).resize === 'stretch',
      ...(this.maskRatio ? { masks: this.maskRatio } : {}),
    });
    const batchesPerEpoch = this.data!.batchesPerEpoch;
    const stepsPerEpoch = Math.ceil(batchesPerEpoch / this.accumulate);
    const layout = this.hooks.paramGroups ? (keys: string[]) => this.hooks.paramGroups!(keys, { weightDecay: cfg.weight_decay }) : undefined;
    this.optimizer = Optimizer.create(this.named(), { optimizer: cfg.optimizer, lr0: cfg.lr0, momentum: cfg.momentum, weightDecay: cfg.weight_decay, nesterov: cfg.nesterov }, layout);
    const sched = {
      lr0: cfg.lr0, epochs: cfg.epochs, stepsPerEpoch,
      warmupEpochs: cfg.warmup_epochs, warmupLrStart: cfg.warmup_lr_start, minLrRatio: cfg.min_lr_ratio, noAugEpochs: cfg.no_aug_epochs,
    };
    this.schedule = this.hooks.schedule?.(sched) ?? new LRSchedule({ scheduler: cfg.scheduler, ...sched });
    if (cfg.ema) this.ema = new ModelEMA(this.named(), cfg.ema_decay);

    const resume = this.resumeFrom;
    if (resume) {
      this.optimizer.loadStateDict(resume.optimizer);
      if (this.ema && resume.ema) this.ema.load(resume.ema, resume.emaUpdates);
      this.startEpoch = resume.epoch + 1;
      this.best = { ...resume.best };
      if (this.startEpoch >= cfg.epochs) {
        throw new LibreYOLOError('config_conflict', `Cannot resume: the checkpoint finished epoch ${resume.epoch + 1} of ${cfg.epochs}; pass a larger epochs= to train further.`);
      }
    } else {
      this.saveDir = await makeRunDir(cfg.project, cfg.name, cfg.exist_ok, cwd);
    }
    this.globalStep = this.startEpoch * stepsPerEpoch;
    // As the original's _initialize_scheduler_lr: the first step of a run (or of a resumed run) takes
    // the schedule's LR in every group, without the group multipliers (D-FINE's backbone x0.5 too);
    // every later step gets lr(k) x multiplier.
    this.optimizer.setLr(this.schedule.lr(this.globalStep), { multipliers: false });
    this.results.save_dir = this.saveDir;
    this.csv = new ResultsCsv(join(this.saveDir, 'results.csv'));
    if (resume && existsSync(this.csv.path)) {
      this.csv.load(readFileSync(this.csv.path, 'utf8'));
      // `time` keeps counting from where the resumed run stopped
      this.timeOffset = Number(this.csv.lastValue('time')) || 0;
    }
    if (cfg.save_plots) this.warn('save_plots: plots are not produced by this package; the final-epoch validation still runs.');
    await writeYaml(join(this.saveDir, 'train_config.yaml'), { ...cfg }, isFloatField);

    if (cfg.profile) {
      let warmup = cfg.profile_warmup;
      let steps = cfg.profile_steps;
      if (this.accumulate > 1) {
        warmup = Math.ceil(warmup / this.accumulate) * this.accumulate;
        steps = Math.ceil(steps / this.accumulate) * this.accumulate;
        this.log(`profile window rounded to accumulation boundaries (warmup=${warmup}, steps=${steps}, accum=${this.accumulate})`);
      }
      const factory = this.runtime.profiler;
      if (!factory) throw new LibreYOLOError('config_unsupported', 'profile=true needs a training profiler: train through model.train(), which brings one.');
      this.profiler = await factory({
        saveDir: this.saveDir, device: this.device, warmup, steps, trace: cfg.profile_trace, log: (line) => this.log(line),
        meta: { model: this.modelName, device: this.device.id, batch: cfg.batch, imgsz: cfg.imgsz, amp: cfg.amp, amp_dtype: 'float16', workers: cfg.workers },
      });
    }
    const prefix = this.profiler?.ortProfilePrefix;
    this.runner = await openStepRunner(this.family, this.network, {
      device: this.device, ...(cfg.threads ? { threads: cfg.threads } : {}), imgsz: [cfg.imgsz, cfg.imgsz], maxTargets: cfg.max_labels,
      amp: this.ampActive(cfg), seed: cfg.seed,
      ...(prefix ? { profileFilePrefix: prefix } : {}),
    });
    this.profiler?.attach?.(this.runner);
    // The first step's session is built here (a while), so epoch 1's timing and the profile see plain steps.
    const firstBatch = Math.min(cfg.batch, this.data!.trainImages);
    const t0 = performance.now();
    await this.runner!.prepare(firstBatch);
    this.log(`Train step ready (batch ${firstBatch}, ${cfg.imgsz}x${cfg.imgsz}) in ${((performance.now() - t0) / 1000).toFixed(1)}s`);

    const params = this.optimizer.numel;
    this.log(`Training ${this.modelName} (${params.toLocaleString('en-US')} parameters, ${this.network.nc} classes) on ${this.device.id}` +
      ` with ${this.data!.trainImages} images, batch ${cfg.batch}${this.accumulate > 1 ? ` x ${this.accumulate} accumulated` : ''}, imgsz ${cfg.imgsz},` +
      ` ${cfg.optimizer} lr0=${cfg.lr0}, ${cfg.epochs} epoch${cfg.epochs === 1 ? '' : 's'}${this.startEpoch ? ` (resuming at epoch ${this.startEpoch + 1})` : ''}; results in ${this.saveDir}`);
  }

  private async trainEpoch(epoch: number): Promise<{ stats: EpochStats; stopped: boolean }> {
    const cfg = this.config;
    const { mosaic, strong } = this.data!.augmentation(epoch);
    const total = this.data!.batchesPerEpoch;
    const stats: EpochStats = { losses: [], images: 0 };
    const accum = this.accumulate;
    let accGrads: Map<string, Float32Array> | null = null;
    let inWindow = 0;
    const started = performance.now();
    this.progress.start(epoch, cfg.epochs, total);
    let batches: AsyncIterable<TrainBatch> = this.data!.epoch(epoch, { mosaic, strong });
    const switches = this.hooks.switches?.(epoch, cfg) ?? {};
    const spec = inputSpec(this.family);
    // The profiler's wrapper passes batches straight through once its window has closed.
    if (this.profiler) batches = this.profiler.wrapLoader(batches);
    const phase = <T>(name: TrainPhase, fn: () => Promise<T>): Promise<T> => (this.profiler ? this.profiler.phase(name, fn) : fn());
    let done = 0;
    let stopped = false;
    try {
      for await (const batch of batches) {
        const n = batch.images.dims[0]!;
        // The loader writes RGB 0..1; the family's network may take another layout (YOLOX: BGR 0..255).
        toNetworkLayout(batch.images.data as Float32Array, batch.images.dims, spec);
        const result: StepResult = await this.runner!.run(batch, phase, switches);
        applyRunningStats(this.network, result.runningStats);
        let grads = result.gradients;
        // amp: a float16 gradient overflowed, the loss scale was halved; the batch updates nothing (as GradScaler).
        if (result.overflow) this.ampSkipped++;
        else if (accum > 1) {
          // the loss is divided by accum: accumulate the scaled gradients until the window is full
          if (!accGrads) {
            accGrads = new Map();
            for (const [k, g] of grads) accGrads.set(k, Float32Array.from(g, (x) => Math.fround(x / accum)));
          } else {
            for (const [k, g] of grads) {
              const a = accGrads.get(k)!;
              for (let i = 0; i < a.length; i++) a[i] = Math.fround(a[i]! + Math.fround(g[i]! / accum));
            }
          }
          inWindow++;
          grads = accGrads;
        }
        if (!result.overflow && (accum === 1 || inWindow === accum || done + 1 === total)) {
          if (cfg.clip_max_norm > 0) clipGradNorm(grads, cfg.clip_max_norm);
          await phase('optimizer', async () => this.optimizer.step(grads));
          accGrads = null;
          inWindow = 0;
          this.ema?.update(this.network.namedTensors());
          this.globalStep++;
          this.optimizer.setLr(this.schedule.lr(this.globalStep));
        }
        done++;
        stats.losses.push(result.loss);
        stats.images += n;
        const l = stats.losses;
        const secs = (performance.now() - started) / 1000;
        this.progress.update(done, {
          loss: mean(l.map((x) => x.total)), components: this.meanComponents(l),
          imgPerS: stats.images / Math.max(secs, 1e-9), lr: this.optimizer.lrs[0]!,
        });
        const prof = this.profiler;
        if (prof) {
          await prof.step();
          if (prof.finished) {
            this.profiler = null;
            if (cfg.profile_then_stop) {
              stopped = true;
              break;
            }
            this.log('Profile window complete; training continues (profile_then_stop=true stops here instead)');
          }
        }
      }
    } finally {
      this.progress.stop();
    }
    return { stats, stopped };
  }

  /** The weights used for validation and saved as `model`: EMA when on, else the raw weights. */
  private evalState(): Map<string, HostTensor> {
    return this.ema ? this.ema.state : stateDictOf(this.network);
  }

  /** Validates the EMA (or raw) weights on the val split as the original's in-training validator. */
  private async validate(): Promise<ValMetrics | null> {
    const split = this.data!.val;
    if (!split) return null;
    const cfg = this.config;
    const task = this.maskRatio ? 'segment' : 'detect';
    const network = this.family.create({ size: this.size, stateDict: this.evalState(), task });
    const model = new EnginePredictor({
      family: this.family, size: this.size, names: this.names, inputSize: [cfg.imgsz, cfg.imgsz], warn: this.warn, task,
      engine: new GraphEngine(network, { device: this.device, ...(cfg.threads ? { threads: cfg.threads } : {}) }),
    });
    try {
      const r = await validate(model, split, { conf: 0.001, iou: 0.65, max_det: 300, batch: cfg.batch, imgsz: cfg.imgsz });
      return r.metrics;
    } finally {
      await model.close();
    }
  }

  private async save(path: string, epoch: number, loss: number | null): Promise<void> {
    const raw = stateDictOf(this.network);
    await saveTrainingCheckpoint(path, {
      model: this.evalState(),
      ...(this.ema ? { trainModel: raw, emaUpdates: this.ema.updates } : {}),
      epoch,
      optimizer: this.optimizer.stateDict(),
      config: { ...this.config },
      loss,
      best: this.best,
      family: this.family.name,
      size: this.size,
      nc: this.network.nc,
      names: this.names,
      imgsz: this.config.imgsz,
      task: this.maskRatio ? 'segment' : 'detect',
    });
  }

  async run(): Promise<TrainResults> {
    const cfg = this.config;
    let stoppedByProfile = false;
    try {
      await this.setup();
      // only now is the run directory known
      const weights = join(this.saveDir, 'weights');
      this.startedAt = performance.now();
      for (let epoch = this.startEpoch; epoch < cfg.epochs; epoch++) {
        const t0 = performance.now();
        // The no-aug phase (also when a resume starts inside it): the EMA restart's constant decay.
        if (this.ema && cfg.ema_restart_decay !== null && cfg.no_aug_epochs > 0 && epoch >= cfg.epochs - cfg.no_aug_epochs) {
          this.ema.setConstantDecay(cfg.ema_restart_decay);
        }
        const { stats, stopped } = await this.trainEpoch(epoch);
        const losses = stats.losses;
        const lossMean = mean(losses.map((l) => l.total));
        const items = this.meanComponents(losses);
        this.results.epoch_losses.push(lossMean);
        this.results.epoch_loss_items.push(items);
        this.results.epoch_lrs.push(this.optimizer.lrs[0]!);
        this.results.final_loss = lossMean;
        if (stopped) {
          stoppedByProfile = true;
          break;
        }
        const final = epoch + 1 === cfg.epochs;
        let metrics: ValMetrics | null = null;
        // The final epoch always validates, so a run shorter than eval_interval still ends with a
        // mAP and a best.pt (the original validates it only with save_plots).
        if ((epoch + 1) % cfg.eval_interval === 0 || final) {
          metrics = await this.validate();
          this.results.val_metrics = metrics;
          this.results.epoch_metrics.push({ epoch: epoch + 1, ...metrics });
        }
        let isBest = false;
        if (metrics) {
          const v = metrics['metrics/mAP50-95'];
          if (!this.best.validated || v > this.best.mAP50_95) {
            isBest = true;
            this.best = { mAP50_95: v, mAP50: metrics['metrics/mAP50'], epoch: epoch + 1, validated: true };
            this.badValidations = 0;
          } else this.badValidations++;
        }
        const savePeriodic = cfg.save_period > 0 && (epoch + 1) % cfg.save_period === 0;
        if (savePeriodic || final || isBest) {
          const last = join(weights, 'last.pt');
          await this.save(last, epoch, lossMean);
          this.results.last_checkpoint = last;
          if (isBest) {
            const best = join(weights, 'best.pt');
            await this.save(best, epoch, lossMean);
            this.results.best_checkpoint = best;
          }
          if (savePeriodic) await this.save(join(weights, `epoch_${epoch + 1}.pt`), epoch, lossMean);
        }
        const row: Record<string, CsvValue> = {
          epoch: epoch + 1,
          time: Math.round(((performance.now() - this.startedAt) / 1000 + this.timeOffset) * 100) / 100,
          'train/loss': lossMean,
          validated: metrics !== null,
          is_best: isBest,
          current_metric: metrics ? metrics['metrics/mAP50-95'] : null,
          current_metric_name: metrics ? BEST_METRIC_KEY : null,
          best_metric: this.best.validated ? this.best.mAP50_95 : null,
          best_metric_name: BEST_METRIC_KEY,
          best_epoch: this.best.validated ? this.best.epoch : null,
          // alphabetical, as the original's YOLOv9 columns (box, cls, dfl)
          ...Object.fromEntries(Object.keys(items).sort().map((k) => [`train/${k}_loss`, items[k]!])),
          ...(metrics ?? {}),
        };
        this.optimizer.lrs.forEach((lr, k) => { row[`lr/group${k}`] = lr; });
        await this.csv.append(row);
        const secs = (performance.now() - t0) / 1000;
        this.log(`Epoch ${epoch + 1}/${cfg.epochs}: loss ${lossMean.toFixed(4)} (${Object.entries(items).map(([k, v]) => `${k} ${v.toFixed(4)}`).join(' ')}), ` +
          `${(stats.images / secs).toFixed(1)} img/s, ${secs.toFixed(1)}s` +
          (metrics ? `; mAP50 ${metrics['metrics/mAP50'].toFixed(4)} mAP50-95 ${metrics['metrics/mAP50-95'].toFixed(4)}${isBest ? ' (best)' : ''}` : ''));
        if (metrics && cfg.patience > 0 && this.badValidations >= cfg.patience) {
          // The original's line, except that it says "epochs" for what are validations.
          this.log(`Early stopping triggered after ${epoch + 1} epochs (patience=${cfg.patience}, no improvement for ${this.badValidations} validations; best mAP50-95 ${this.best.mAP50_95.toFixed(4)} at epoch ${this.best.epoch})`);
          break;
        }
      }
    } finally {
      await this.profiler?.close?.();
      await this.runner?.close();
      await this.data?.close();
    }
    const secs = (performance.now() - this.startedAt) / 1000;
    if (stoppedByProfile) {
      this.log(`Profile-only run (profile_then_stop=true): training stopped after the profile window in ${secs.toFixed(1)}s; the partial epoch was not validated or checkpointed`);
    }
    this.results.best_mAP50 = this.best.mAP50;
    this.results.best_mAP50_95 = this.best.mAP50_95;
    this.results.best_epoch = this.best.epoch;
    await writeJson(join(this.saveDir, 'summary.json'), {
      model: this.modelName, device: this.device.id, epochs: cfg.epochs, batch: cfg.batch, imgsz: cfg.imgsz,
      accumulate: this.accumulate, amp: this.ampActive(cfg), amp_requested: cfg.amp, amp_skipped_steps: this.ampSkipped, seconds: Math.round(secs * 100) / 100,
      threads: cfg.threads ?? cpus().length,
      ...(this.autoBatch ? { auto_batch: { batch: this.autoBatch.batch, points: this.autoBatch.points, total_mb: this.autoBatch.totalMb, fraction: this.autoBatch.fraction } } : {}),
      ...this.results,
    });
    return this.results;
  }
}
