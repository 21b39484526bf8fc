/**
 * YOLOX's training hooks: SimOTA on the host (assign.ts) between the train-mode forward
 * and the loss graph (loss.ts), the L1 term switched on for the last `no_aug_epochs`, the original's
 * recipe as defaults, its warm-up + cosine + final-plateau LR schedule, the head-bias prior set at
 * setup (also when fine-tuning), and the class-layer rebuild for another class count.
 */
import type { HostTensor } from '../../graph/tensor.ts';
import { STANDARD_STEPS, type AugmentRecipe } from '../../data/recipe.ts';
import { mulberry32 } from '../../util/random.ts';
import type { DetectionNetwork, ScheduleInputs, StateDict, TrainingHooks } from '../registry.ts';
import { ASSIGNED, asYolox, yoloxAssigner } from './assign.ts';
import { initializeYolox } from './init.ts';
import { emitYoloxLoss } from './loss.ts';

/** `-ln((1 - 0.01) / 0.01)`: the cls and obj bias prior of `initialize_biases(0.01)`. */
export const BIAS_PRIOR = -Math.log((1 - 0.01) / 0.01);

/** The original's YOLOXConfig where it differs from the core defaults. */
export const YOLOX_TRAIN_DEFAULTS: Readonly<Record<string, unknown>> = {
  epochs: 300, batch: 16, imgsz: 640, workers: 4, lr0: 0.01, momentum: 0.9, nesterov: true, weight_decay: 5e-4,
  warmup_epochs: 5, warmup_lr_start: 0, no_aug_epochs: 15, min_lr_ratio: 0.05, scheduler: 'warmcos',
  mosaic_prob: 1.0, mixup_prob: 1.0, hsv_prob: 1.0, flip_prob: 0.5, degrees: 10.0, translate: 0.1, shear: 2.0,
  mosaic_scale: [0.1, 2.0], mixup_scale: [0.5, 1.5], ema: true, ema_decay: 0.9998, max_labels: 50, name: 'exp',
};

/**
 * The original's pipeline: every mosaic goes through the random affine onto the input, then mixup,
 * HSV and flip; mosaic (and the mixup after it) stop for the last `no_aug_epochs`.
 */
export const YOLOX_AUGMENT: AugmentRecipe = [
  STANDARD_STEPS.mosaic, STANDARD_STEPS.randomAffine, STANDARD_STEPS.mixup, STANDARD_STEPS.hsv, STANDARD_STEPS.flip,
];

/**
 * The original's WarmupCosineScheduler per optimizer step i: lr0 (i/W)^2 during W warm-up steps,
 * then cosine from lr0 to min = min_lr_ratio lr0 over T - W - P steps, and min for the last P
 * (no-aug) steps.
 */
export function yoloxSchedule(c: ScheduleInputs): { lr(step: number): number } {
  const W = c.warmupEpochs * c.stepsPerEpoch;
  const T = c.epochs * c.stepsPerEpoch;
  const P = c.noAugEpochs * c.stepsPerEpoch;
  const min = c.minLrRatio * c.lr0;
  return {
    lr(i) {
      if (W > 0 && i <= W) return (c.lr0 - c.warmupLrStart) * (i / W) ** 2 + c.warmupLrStart;
      if (i >= T - P) return min;
      return min + 0.5 * (c.lr0 - min) * (1 + Math.cos(Math.PI * (i - W) / Math.max(1, T - W - P)));
    },
  };
}

/** The cls and obj biases of every level at the prior (the trainer's `initialize_biases`). */
export function setBiasPrior(network: DetectionNetwork): void {
  for (const [key, p] of asYolox(network).namedTensors()) {
    if (/^head\.(cls|obj)_preds\.\d+\.bias$/.test(key)) (p.value.data as Float32Array).fill(BIAS_PRIOR);
  }
}

/**
 * A state dict whose class convs fit `nc`: each `head.cls_preds.<k>` gets fresh PyTorch-default
 * weights and bias U(+-1/sqrt(fan_in)); every other tensor is kept (the original's rebuild).
 */
export function yoloxForClasses(sd: StateDict, nc: number, seed: number): StateDict {
  const out = new Map<string, HostTensor>(sd);
  const rand = mulberry32(seed + 7919);
  for (let k = 0; ; k++) {
    const old = sd.get(`head.cls_preds.${k}.weight`);
    if (!old) break;
    if (old.dims[0] === nc) continue;
    const width = old.dims[1]!;
    const bound = 1 / Math.sqrt(width);
    out.set(`head.cls_preds.${k}.weight`, { dtype: 'float32', dims: [nc, width, 1, 1], data: new Float32Array(nc * width).map(() => (rand() * 2 - 1) * bound) });
    out.set(`head.cls_preds.${k}.bias`, { dtype: 'float32', dims: [nc], data: new Float32Array(nc).map(() => (rand() * 2 - 1) * bound) });
  }
  return out;
}

export function yoloxTrainingHooks(create: (size: string, sd: StateDict) => DetectionNetwork): TrainingHooks {
  return {
    lossNames: ['iou', 'obj', 'cls', 'l1'],
    emitLoss(b, network, inputs, shape) {
      const net = asYolox(network);
      b.preciseSilu = true; // the assignment forward (assign.ts) sets it too: both see the same predictions
      const levels = net.head.logits(b, net.features(b, inputs.images));
      const a = inputs.assigned;
      const assigned = {
        fg: a[ASSIGNED.fg]!, cls: a[ASSIGNED.cls]!, iou: a[ASSIGNED.iou]!, box: a[ASSIGNED.box]!, l1: a[ASSIGNED.l1]!,
        norm: a[ASSIGNED.norm]!, fgPerGt: a[ASSIGNED.fgPerGt]!,
      };
      return b.scope('loss', () => emitYoloxLoss(b, levels, assigned, inputs.switches.use_l1!, shape, net.nc));
    },
    assigner: yoloxAssigner,
    // The L1 term is on in the no-aug epochs (epoch index >= epochs - no_aug_epochs), as the original.
    switches: (epoch, cfg) => ({ use_l1: epoch >= cfg.epochs - cfg.no_aug_epochs }),
    defaults: YOLOX_TRAIN_DEFAULTS,
    adaptClasses: (sd, size, nc, seed) => create(size, yoloxForClasses(sd, nc, seed)),
    initialize: (network, seed) => initializeYolox(asYolox(network), seed),
    onSetup: setBiasPrior,
    schedule: yoloxSchedule,
    augment: YOLOX_AUGMENT,
  };
}
