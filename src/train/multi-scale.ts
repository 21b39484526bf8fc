/**
 * Multi-scale training (`multi_scale=true`, the family's TrainingHooks.multiScale): per batch, or per
 * optimizer step, a side drawn uniformly from the family's list with the run's seed (or the family's
 * own per-step rule, MultiScale.stepSide), the loader's
 * batch resized to it; outside the schedule's epochs every batch trains at imgsz. The step runner
 * serves every side of the list from one session (TrainStepOptions.sizes).
 */
import { LibreYOLOError } from '../errors.ts';
import { resizeBatchBilinear } from '../data/batch-resize.ts';
import { scheduledEpochs } from '../data/recipe.ts';
import type { TrainBatch } from '../data/train-batch.ts';
import type { DetectionNetwork, ModelFamily, MultiScale, TrainingHooks } from '../models/registry.ts';
import { mulberry32 } from '../util/random.ts';
import type { TrainConfig } from './config.ts';

export class MultiScaleSampler {
  /** The family's list for this run (repeats weight the draw). */
  readonly sizes: readonly number[];
  /** Batches trained at each side (imgsz included), for summary.json. */
  readonly batches = new Map<number, number>();
  private readonly on: (epoch: number, epochs: number) => boolean;
  // Its own stream: the step's generator (denoising draws) is seeded with cfg.seed.
  private readonly rand: () => number;
  private side: number;

  constructor(private readonly ms: MultiScale, private readonly cfg: Pick<TrainConfig, 'imgsz' | 'seed' | 'epochs'>, private readonly network: DetectionNetwork, option: (name: string) => unknown) {
    this.sizes = ms.sizes(cfg.imgsz, network);
    this.on = scheduledEpochs(ms.schedule, option, 'multi-scale');
    this.rand = mulberry32((cfg.seed ^ 0x6d756c74) >>> 0);
    this.side = cfg.imgsz;
  }

  /** Every side a batch may train at, each once: imgsz first when the schedule may fall back to it or the list holds it. */
  get distinct(): number[] {
    const withImgsz = this.ms.schedule !== undefined || this.sizes.includes(this.cfg.imgsz);
    return [...new Set(withImgsz ? [this.cfg.imgsz, ...this.sizes] : this.sizes)];
  }

  /**
   * The batch at this draw's side: a new draw for every batch (`per: 'batch'`) or at the first
   * micro-batch of an optimizer step (`stepStart`, `per: 'step'`; `step` the optimizer step's
   * 0-based index over the run); imgsz outside the schedule.
   */
  apply(batch: TrainBatch, epoch: number, stepStart: boolean, step: number): TrainBatch {
    if (!this.on(epoch, this.cfg.epochs)) this.side = this.cfg.imgsz;
    else if (this.ms.per === 'step' && stepStart && this.ms.stepSide) this.side = this.ms.stepSide(step, this.network);
    else if (this.ms.per === 'batch' || stepStart) this.side = this.sizes[Math.floor(this.rand() * this.sizes.length)]!;
    this.batches.set(this.side, (this.batches.get(this.side) ?? 0) + 1);
    const [, , h, w] = batch.images.dims as [number, number, number, number];
    if (h === this.side && w === this.side) return batch;
    return { ...batch, images: resizeBatchBilinear(batch.images, this.side, this.side) };
  }
}

/** The run's sampler when `multi_scale=true`, refused for a family without multi-scale training. */
export function multiScaleSampler(cfg: TrainConfig, family: ModelFamily, hooks: TrainingHooks, network: DetectionNetwork): MultiScaleSampler | null {
  if (!cfg.multi_scale) return null;
  if (!hooks.multiScale) {
    throw new LibreYOLOError('config_unsupported', `train: multi_scale=true is not implemented for ${family.displayName} training: every batch trains at imgsz. Leave it out or pass multi_scale=false.`);
  }
  const option = (name: string): unknown => (Object.hasOwn(cfg, name) ? (cfg as unknown as Record<string, unknown>)[name] : undefined);
  return new MultiScaleSampler(hooks.multiScale, cfg, network, option);
}
