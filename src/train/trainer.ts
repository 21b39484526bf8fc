/**
 * The training loop: epochs of forward + loss + backward on ONNX Runtime (one
 * session per step shape, `TrainStep`), the optimizer and LR schedule on the host, EMA of the
 * weights, gradient accumulation when the nominal batch `nbs` exceeds the micro-batch, the
 * recipe's scheduled augmentations switched per epoch (close-mosaic for the last `no_aug_epochs`),
 * validation every `eval_interval` epochs and at the final one on the EMA weights, and the
 * run directory `runs/train/<name>[N]/` with `weights/last.pt`, `best.pt`, `epoch_<n>.pt`,
 * `results.csv`, `train_config.yaml` and `summary.json`. The run is resolved and its network built
 * in prepare.ts (config, resume, weight transfer), and opened in setup.ts (loader, optimizer,
 * schedule, EMA, run directory, profiler, step runner).
 *
 * The network being trained is a copy: the model passed to `trainModel` keeps its weights and
 * sessions. After training, load `best_checkpoint` (or `last_checkpoint`) to use the result.
 */
import { cpus } from 'node:os';
import { join } from 'node:path';
import { applyRunningStats, stateDictOf } from '../graph/state-dict.ts';
import type { HostTensor } from '../graph/tensor.ts';
import type { DatasetConfig } from '../data/dataset.ts';
import type { TrainBatch } from '../data/train-batch.ts';
import { inputSpec, trainingHooks, type DetectionNetwork, type ModelFamily, type TrainingHooks } from '../models/registry.ts';
import { EnginePredictor } from '../predict/engine-predictor.ts';
import { toNetworkLayout } from '../predict/preprocess.ts';
import type { Device } from '../runtime/device.ts';
import { GraphEngine } from '../runtime/graph-engine.ts';
import { defaultWarn, type Warn } from '../util/warn.ts';
import { validate } from '../val/validate.ts';
import { writeJson, type CsvValue } from './artifacts.ts';
import { BEST_METRIC_KEY, saveTrainingCheckpoint, type ResumeState } from './checkpoint.ts';
import type { TrainConfig } from './config.ts';
import { clipGradNorm } from './optimizer.ts';
import { accumulateGradient } from './update-kernels.ts';
import { prepareTraining, type TrainOptions, type TrainRuntime, type TrainSource } from './prepare.ts';
import type { TrainPhase } from './profiler-port.ts';
import { ampActive, setupTraining, TrainState } from './setup.ts';
import type { LossComponents, StepResult } from './types.ts';

export type { TrainOptions, TrainRuntime, TrainSource } from './prepare.ts';

/** Validation metrics under the original's results.csv names (`metrics/mAP50-95`, `metrics/mAP50`, ...). */
export type ValMetrics = Record<string, number>;

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
  /** What the run opens and keeps (setup.ts fills it). */
  private readonly state = new TrainState();
  /** amp: batches whose update was skipped because a float16 gradient overflowed. */
  private ampSkipped = 0;
  private badValidations = 0;
  private readonly warn: Warn;
  private readonly results: TrainResults;
  private startedAt = 0;
  private resumeFrom: ResumeState | null = null;
  private datasetConfig!: DatasetConfig;

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
    const p = await prepareTraining(model, options, runtime);
    const trainer = new Trainer(p.config, p.family, p.size, p.network, p.device, p.names, runtime);
    trainer.datasetConfig = p.datasetConfig;
    trainer.resumeFrom = p.resume;
    if (p.saveDir) trainer.state.saveDir = p.saveDir;
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

  private log(line: string): void {
    this.state.progress.line(line);
  }

  private async trainEpoch(epoch: number): Promise<{ stats: EpochStats; stopped: boolean }> {
    const cfg = this.config;
    const { mosaic, strong } = this.state.data!.augmentation(epoch);
    const total = this.state.data!.batchesPerEpoch;
    const stats: EpochStats = { losses: [], images: 0 };
    const accum = this.state.accumulate;
    let accGrads: Map<string, Float32Array> | null = null;
    let inWindow = 0;
    const started = performance.now();
    this.state.progress.start(epoch, cfg.epochs, total);
    let batches: AsyncIterable<TrainBatch> = this.state.data!.epoch(epoch, { mosaic, strong });
    const switches = this.hooks.switches?.(epoch, cfg) ?? {};
    const spec = inputSpec(this.family);
    // The profiler's wrapper passes batches straight through once its window has closed.
    if (this.state.profiler) batches = this.state.profiler.wrapLoader(batches);
    const phase = <T>(name: TrainPhase, fn: () => Promise<T>): Promise<T> => (this.state.profiler ? this.state.profiler.phase(name, fn) : fn());
    let done = 0;
    let stopped = false;
    try {
      for await (const loaded of batches) {
        // multi_scale: this batch's side (a new draw per batch, or per optimizer step).
        const batch = this.state.multiScale?.apply(loaded, epoch, inWindow === 0, this.state.globalStep) ?? loaded;
        const n = batch.images.dims[0]!;
        // The loader writes RGB 0..1; the family's network may take another layout (YOLOX: BGR 0..255).
        toNetworkLayout(batch.images.data as Float32Array, batch.images.dims, spec);
        const result: StepResult = await this.state.runner!.run(batch, phase, switches);
        applyRunningStats(this.network, result.runningStats);
        let grads = result.gradients;
        // amp: a float16 gradient overflowed, the loss scale was halved; the batch updates nothing (as GradScaler).
        if (result.overflow) this.ampSkipped++;
        else if (accum > 1) {
          // the loss is divided by accum: accumulate the scaled gradients until the window is full
          const first = !accGrads;
          accGrads ??= new Map([...grads].map(([k, g]) => [k, new Float32Array(g.length)]));
          for (const [k, g] of grads) accumulateGradient(accGrads.get(k)!, g, accum, first);
          inWindow++;
          grads = accGrads;
        }
        if (!result.overflow && (accum === 1 || inWindow === accum || done + 1 === total)) {
          if (cfg.clip_max_norm > 0) clipGradNorm(grads, cfg.clip_max_norm);
          await phase('optimizer', async () => this.state.optimizer.step(grads));
          accGrads = null;
          inWindow = 0;
          this.state.ema?.update(this.network.namedTensors());
          this.state.globalStep++;
          this.state.optimizer.setLr(this.state.schedule.lr(this.state.globalStep));
        }
        done++;
        stats.losses.push(result.loss);
        stats.images += n;
        const l = stats.losses;
        const secs = (performance.now() - started) / 1000;
        this.state.progress.update(done, {
          loss: mean(l.map((x) => x.total)), components: this.meanComponents(l),
          imgPerS: stats.images / Math.max(secs, 1e-9), lr: this.state.optimizer.lrs[0]!,
        });
        const prof = this.state.profiler;
        if (prof) {
          await prof.step();
          if (prof.finished) {
            this.state.profiler = null;
            if (cfg.profile_then_stop) {
              stopped = true;
              break;
            }
            this.log('Profile window complete; training continues (profile_then_stop=true stops here instead)');
          }
        }
      }
    } finally {
      this.state.progress.stop();
    }
    return { stats, stopped };
  }

  /** The weights used for validation and saved as `model`: EMA when on, else the raw weights. */
  private evalState(): Map<string, HostTensor> {
    return this.state.ema ? this.state.ema.state : stateDictOf(this.network);
  }

  /**
   * The side validation runs at: imgsz, except for a fixed-size family trained at another side (DEIM
   * honours imgsz in training, as the original's transform does, but its eval graph runs at 640 only):
   * there the family's eval size, the one the saved checkpoint predicts at.
   */
  private get validationImgsz(): number {
    const fixed = this.family.fixedImgsz;
    return fixed && !fixed.includes(this.config.imgsz) ? fixed[0]! : this.config.imgsz;
  }

  /** Validates the EMA (or raw) weights on the val split as the original's in-training validator. */
  private async validate(): Promise<ValMetrics | null> {
    const split = this.state.data!.val;
    if (!split) return null;
    const cfg = this.config;
    const task = this.maskRatio ? 'segment' : 'detect';
    const network = this.family.create({ size: this.size, stateDict: this.evalState(), task });
    const side = this.validationImgsz;
    const model = new EnginePredictor({
      family: this.family, size: this.size, names: this.names, inputSize: [side, side], warn: this.warn, task,
      engine: new GraphEngine(network, { device: this.device, ...(cfg.threads ? { threads: cfg.threads } : {}) }),
    });
    try {
      const r = await validate(model, split, { conf: 0.001, iou: 0.65, max_det: 300, batch: cfg.batch, imgsz: side });
      return r.metrics;
    } finally {
      await model.close();
    }
  }

  private async save(path: string, epoch: number, loss: number | null): Promise<void> {
    const raw = stateDictOf(this.network);
    await saveTrainingCheckpoint(path, {
      model: this.evalState(),
      ...(this.state.ema ? { trainModel: raw, emaUpdates: this.state.ema.updates } : {}),
      epoch,
      optimizer: this.state.optimizer.stateDict(),
      config: { ...this.config },
      loss,
      best: this.state.best,
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
      await setupTraining(this.state, {
        config: cfg, family: this.family, network: this.network, device: this.device, hooks: this.hooks, warn: this.warn,
        runtime: this.runtime, datasetConfig: this.datasetConfig, resume: this.resumeFrom, modelName: this.modelName,
      });
      this.results.save_dir = this.state.saveDir;
      // only now is the run directory known
      const weights = join(this.state.saveDir, 'weights');
      this.startedAt = performance.now();
      for (let epoch = this.state.startEpoch; epoch < cfg.epochs; epoch++) {
        const t0 = performance.now();
        // The no-aug phase (also when a resume starts inside it): the EMA restart's constant decay.
        if (this.state.ema && cfg.ema_restart_decay !== null && cfg.no_aug_epochs > 0 && epoch >= cfg.epochs - cfg.no_aug_epochs) {
          this.state.ema.setConstantDecay(cfg.ema_restart_decay);
        }
        const { stats, stopped } = await this.trainEpoch(epoch);
        const losses = stats.losses;
        const lossMean = mean(losses.map((l) => l.total));
        const items = this.meanComponents(losses);
        this.results.epoch_losses.push(lossMean);
        this.results.epoch_loss_items.push(items);
        this.results.epoch_lrs.push(this.state.optimizer.lrs[0]!);
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
          if (!this.state.best.validated || v > this.state.best.mAP50_95) {
            isBest = true;
            this.state.best = { mAP50_95: v, mAP50: metrics['metrics/mAP50'], epoch: epoch + 1, validated: true };
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
          time: Math.round(((performance.now() - this.startedAt) / 1000 + this.state.timeOffset) * 100) / 100,
          'train/loss': lossMean,
          validated: metrics !== null,
          is_best: isBest,
          current_metric: metrics ? metrics['metrics/mAP50-95'] : null,
          current_metric_name: metrics ? BEST_METRIC_KEY : null,
          best_metric: this.state.best.validated ? this.state.best.mAP50_95 : null,
          best_metric_name: BEST_METRIC_KEY,
          best_epoch: this.state.best.validated ? this.state.best.epoch : null,
          // alphabetical, as the original's YOLOv9 columns (box, cls, dfl)
          ...Object.fromEntries(Object.keys(items).sort().map((k) => [`train/${k}_loss`, items[k]!])),
          ...(metrics ?? {}),
        };
        this.state.optimizer.lrs.forEach((lr, k) => { row[`lr/group${k}`] = lr; });
        await this.state.csv.append(row);
        const secs = (performance.now() - t0) / 1000;
        this.log(`Epoch ${epoch + 1}/${cfg.epochs}: loss ${lossMean.toFixed(4)} (${Object.entries(items).map(([k, v]) => `${k} ${v.toFixed(4)}`).join(' ')}), ` +
          `${(stats.images / secs).toFixed(1)} img/s, ${secs.toFixed(1)}s` +
          (metrics ? `; mAP50 ${metrics['metrics/mAP50'].toFixed(4)} mAP50-95 ${metrics['metrics/mAP50-95'].toFixed(4)}${isBest ? ' (best)' : ''}` : ''));
        if (metrics && cfg.patience > 0 && this.badValidations >= cfg.patience) {
          // The original's line, except that it says "epochs" for what are validations.
          this.log(`Early stopping triggered after ${epoch + 1} epochs (patience=${cfg.patience}, no improvement for ${this.badValidations} validations; best mAP50-95 ${this.state.best.mAP50_95.toFixed(4)} at epoch ${this.state.best.epoch})`);
          break;
        }
      }
    } finally {
      await this.state.profiler?.close?.();
      await this.state.runner?.close();
      await this.state.data?.close();
    }
    const secs = (performance.now() - this.startedAt) / 1000;
    if (stoppedByProfile) {
      this.log(`Profile-only run (profile_then_stop=true): training stopped after the profile window in ${secs.toFixed(1)}s; the partial epoch was not validated or checkpointed`);
    }
    this.results.best_mAP50 = this.state.best.mAP50;
    this.results.best_mAP50_95 = this.state.best.mAP50_95;
    this.results.best_epoch = this.state.best.epoch;
    await writeJson(join(this.state.saveDir, 'summary.json'), {
      model: this.modelName, device: this.device.id, epochs: cfg.epochs, batch: cfg.batch, imgsz: cfg.imgsz,
      accumulate: this.state.accumulate, amp: ampActive(cfg, this.device), amp_requested: cfg.amp, amp_skipped_steps: this.ampSkipped, seconds: Math.round(secs * 100) / 100,
      threads: cfg.threads ?? cpus().length,
      ...(this.state.multiScale ? {
        multi_scale: {
          sizes: this.state.multiScale.distinct, train_sessions: this.state.runner?.opened ?? 0,
          batches_per_size: Object.fromEntries([...this.state.multiScale.batches].sort(([a], [b]) => a - b)),
        },
      } : {}),
      ...(this.state.autoBatch ? { auto_batch: { batch: this.state.autoBatch.batch, points: this.state.autoBatch.points, total_mb: this.state.autoBatch.totalMb, fraction: this.state.autoBatch.fraction } } : {}),
      ...this.results,
    });
    return this.results;
  }
}
