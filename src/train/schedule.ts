/**
 * Learning-rate schedules, stepped per optimizer step. Every group gets the same LR.
 *
 *   W = steps_per_epoch * warmup_epochs;  T = steps_per_epoch * epochs;  lr_start = min(warmup_lr_start, lr0)
 *   warm-up (it <= W):    lr_start + (lr0 - lr_start) * it / W
 *   linear (after W):     lr0 - (lr0 - lr0 * min_lr_ratio) * (it - W) / max(1, T - W)
 *   cos / warmcos:        min_lr + 0.5 * (lr0 - min_lr) * (1 + cos(pi * (it - W) / max(1, T - W)))
 *   lr_drop (any):        x 0.1 from it = steps_per_epoch * lr_drop on
 *
 * `lr(0)` (or `lr(start_epoch * steps_per_epoch)` on resume) is applied before the first step and
 * `lr(global_step + 1)` after every optimizer step.
 */
import { LibreYOLOError } from '../errors.ts';
import { lrDropFactor, type ScheduleInputs } from '../models/registry.ts';

export type SchedulerName = 'linear' | 'cos' | 'warmcos';

/** The family contract's schedule inputs (stepsPerEpoch = ceil(batches / accumulate)) plus the built-in scheduler's name. */
export interface ScheduleConfig extends Omit<ScheduleInputs, 'noAugEpochs'> {
  scheduler: SchedulerName;
}

export const SCHEDULE_DEFAULTS = { scheduler: 'linear' as SchedulerName, warmupEpochs: 3, warmupLrStart: 1e-4, minLrRatio: 0.01 };

export class LRSchedule {
  readonly warmupSteps: number;
  readonly totalSteps: number;
  readonly lrStart: number;
  readonly minLr: number;

  constructor(readonly config: ScheduleConfig) {
    const name = String(config.scheduler).toLowerCase();
    if (name !== 'linear' && name !== 'cos' && name !== 'warmcos') {
      throw new LibreYOLOError('config_type_error', `Unknown scheduler '${config.scheduler}'. Use linear, cos or warmcos.`);
    }
    this.config = { ...config, scheduler: name };
    this.warmupSteps = config.stepsPerEpoch * config.warmupEpochs;
    this.totalSteps = config.stepsPerEpoch * config.epochs;
    this.lrStart = Math.min(config.warmupLrStart, config.lr0);
    this.minLr = config.lr0 * config.minLrRatio;
  }

  /** Learning rate at optimizer step `it` (0-based, counted over the whole run). */
  lr(it: number): number {
    return this.base(it) * lrDropFactor(it, this.config);
  }

  private base(it: number): number {
    const { lr0 } = this.config;
    const W = this.warmupSteps;
    if (W > 0 && it <= W) return this.lrStart + (lr0 - this.lrStart) * it / W;
    const progress = (it - W) / Math.max(1, this.totalSteps - W);
    if (this.config.scheduler === 'linear') return lr0 - (lr0 - this.minLr) * progress;
    return this.minLr + 0.5 * (lr0 - this.minLr) * (1 + Math.cos(Math.PI * progress));
  }
}
