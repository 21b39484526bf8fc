/**
 * D-FINE's training hooks: the train-mode forward (train-forward.ts) with contrastive
 * denoising queries drawn on the host (the contract's `HostAssigner.draws`, denoising.ts), the
 * Hungarian matchings and the criterion's detached factors on the host (loss-targets.ts) from a
 * forward-only run of the same graph, and the criterion as graph ops (loss.ts); the original's
 * recipe (DFINEConfig) as defaults and its flat-cosine schedule. DEIM trains the same way with
 * MAL as its class term and DEIMConfig's defaults (dfine.md 1.4, 6.1).
 */
import type { HostTensor } from '../../graph/tensor.ts';
import { STANDARD_STEPS, type AugmentRecipe } from '../../data/recipe.ts';
import { LibreYOLOError } from '../../errors.ts';
import type { DetectionNetwork, HostAssigner, MultiScale, ScheduleInputs, StateDict, TrainShape, TrainingHooks } from '../registry.ts';
import { drawDenoising, denoisingGroups } from './denoising.ts';
import { initializeDfine } from './init.ts';
import type { DfineSize, DfineVariant } from './config.ts';
import { emitDfineLoss } from './loss.ts';
import { dfineLossInputs, dfineLossInputSpecs, type DfineLossContext } from './loss-targets.ts';
import { CLASS_LOSS, lossNamesOf } from './loss-terms.ts';
import { imageTargets } from '../detr/matching.ts';
import { denoisingPositiveIdx, type ImageTargets } from './matcher.ts';
import { DfineNetwork } from './network.ts';
import { emitDfineTrainForward } from './train-forward.ts';
import { dfineDnInputSpecs, dfineTrainOutputRecord } from './train-outputs.ts';

/** DFINEConfig where it differs from the core defaults. */
export const DFINE_TRAIN_DEFAULTS: Readonly<Record<string, unknown>> = {
  epochs: 132, batch: 16, imgsz: 640, workers: 4, lr0: 2e-4, optimizer: 'adamw', weight_decay: 1e-4, momentum: 0.9,
  warmup_epochs: 2, warmup_lr_start: 1e-6, no_aug_epochs: 4, min_lr_ratio: 0.05,
  mosaic_prob: 0, mixup_prob: 0, hsv_prob: 0, flip_prob: 0.5, degrees: 0, translate: 0, shear: 0,
  ema: true, ema_decay: 0.9999, ema_restart_decay: 0.9999, aug_stop_epoch_ratio: 0.85, amp: false, max_labels: 120, clip_max_norm: 0.1, name: 'dfine_exp',
};

/**
 * The core's steps (mosaic and HSV off by its defaults) plus D-FINE's strong ops (photometric
 * distort, zoom-out, IoU crop) on every sample with boxes until int(epochs x aug_stop_epoch_ratio),
 * never in the no-aug epochs (the original's stop epoch and close-mosaic).
 */
export const DFINE_AUGMENT: AugmentRecipe = [
  STANDARD_STEPS.mosaic, STANDARD_STEPS.randomAffineIfAsked, STANDARD_STEPS.mixup,
  { step: 'strong', schedule: { offLast: 'no_aug_epochs', stopRatio: 'aug_stop_epoch_ratio' } },
  STANDARD_STEPS.hsv, STANDARD_STEPS.flip,
];

/**
 * The input sides D-FINE's multi-scale collate draws from for a run at `imgsz`: the original's
 * list is generate_scales(640, 3) = [480, 512, ..., 608, 640, 640, 640, 800, 768, ..., 672]; read
 * here with imgsz as the base (the list above at 640): the multiples of 32 from 0.75 imgsz up to
 * imgsz, imgsz three times, the multiples of 32 from 1.25 imgsz down to imgsz.
 */
export function dfineMultiScaleSizes(imgsz: number): number[] {
  const lo = Math.floor((imgsz * 0.75) / 32) * 32;
  const hi = Math.floor((imgsz * 1.25) / 32) * 32;
  const n = Math.floor((imgsz - lo) / 32);
  return [...Array.from({ length: n }, (_, k) => lo + 32 * k), imgsz, imgsz, imgsz, ...Array.from({ length: n }, (_, k) => hi - 32 * k)];
}

/**
 * D-FINE's and DEIM's multi-scale (one collate): a side per batch from dfineMultiScaleSizes, the
 * whole batch resized bilinearly, until the stop epoch int(epochs x aug_stop_epoch_ratio) (the
 * no-aug epochs are not excluded, as they are for the strong ops: the collate has only the stop epoch).
 */
const DFINE_MULTI_SCALE: MultiScale = {
  sizes(imgsz, network) {
    const net = asDfine(network);
    const sizes = dfineMultiScaleSizes(imgsz);
    const smallest = Math.min(...sizes);
    const tokens = net.strides.reduce((t, s) => t + (smallest / s) ** 2, 0);
    if (tokens < 300) {
      throw new LibreYOLOError('invalid_imgsz', `multi_scale=true at imgsz=${imgsz} trains down to ${smallest}x${smallest}, where D-FINE ${net.options.size} has ${tokens} encoder tokens, fewer than its 300 queries. Pass a larger imgsz or multi_scale=false.`);
    }
    return sizes;
  },
  per: 'batch',
  resize: 'bilinear',
  schedule: { stopRatio: 'aug_stop_epoch_ratio' },
};

/** DEIMConfig where it differs from DFINEConfig. */
export const DEIM_TRAIN_DEFAULTS: Readonly<Record<string, unknown>> = {
  ...DFINE_TRAIN_DEFAULTS, lr0: 4e-4, no_aug_epochs: 12, min_lr_ratio: 0.5, aug_stop_epoch_ratio: 0.91, name: 'deim_exp',
};

/** backbone_lr_mult: DFINEConfig's 0.5 at every size, DEIMConfig's per size. */
export const BACKBONE_LR_MULT: Record<DfineVariant, Record<DfineSize, number>> = {
  dfine: { n: 0.5, s: 0.5, m: 0.5, l: 0.5, x: 0.5 },
  deim: { n: 0.5, s: 0.5, m: 0.1, l: 0.05, x: 0.01 },
};

/**
 * The original's four AdamW groups, empty ones left out: head with decay, head
 * without, backbone with, backbone without (LR x backbone_lr_mult). No decay for names holding
 * "norm", ".bn.", "bias" or "lab.scale" (substrings: MHA's in_proj_bias included).
 */
export function dfineParamGroups(trainable: string[], cfg: { weightDecay: number; backboneLrMult: number }): Array<{ name: string; keys: string[]; weightDecay: number; lrMult: number }> {
  const noDecay = (k: string): boolean => k.includes('norm') || k.includes('.bn.') || k.includes('bias') || k.includes('lab.scale');
  const backbone = (k: string): boolean => k.startsWith('backbone.');
  const groups = [
    { name: 'head_wd', keys: trainable.filter((k) => !backbone(k) && !noDecay(k)), weightDecay: cfg.weightDecay, lrMult: 1 },
    { name: 'head_no_wd', keys: trainable.filter((k) => !backbone(k) && noDecay(k)), weightDecay: 0, lrMult: 1 },
    { name: 'backbone_wd', keys: trainable.filter((k) => backbone(k) && !noDecay(k)), weightDecay: cfg.weightDecay, lrMult: cfg.backboneLrMult },
    { name: 'backbone_no_wd', keys: trainable.filter((k) => backbone(k) && noDecay(k)), weightDecay: 0, lrMult: cfg.backboneLrMult },
  ];
  return groups.filter((g) => g.keys.length > 0);
}

function asDfine(network: DetectionNetwork): DfineNetwork {
  if (!(network instanceof DfineNetwork)) throw new Error('dfine training hooks got a network of another family');
  return network;
}

/** Denoising slots of a train shape: the most any batch of `maxTargets` rows per image needs (2 G_max G). */
export function dfineDnSlots(maxTargets: number): number {
  let slots = 0;
  for (let g = 1; g <= maxTargets; g++) slots = Math.max(slots, denoisingGroups(g).numDn);
  return slots;
}

function lossContext(net: DfineNetwork, shape: TrainShape, targets: readonly ImageTargets[] | null): DfineLossContext {
  const { regScale, project } = net.decoder.fdrConstants();
  const slots = dfineDnSlots(shape.maxTargets);
  const numGts = targets ? targets.map((t) => t.labels.length) : [];
  const { positiveIdx, maxGts } = denoisingPositiveIdx(numGts);
  const { groups, numDn } = denoisingGroups(maxGts);
  return {
    batch: shape.batch, nc: net.options.nc, layers: net.cfg.decLayers, queries: 300, regMax: project.length - 1, regScale, project,
    dn: { slots, numDn, numGroup: groups, positiveIdx }, cls: CLASS_LOSS[net.variant],
  };
}

const forward = (b: Parameters<TrainingHooks['emitLoss']>[0], net: DfineNetwork, images: string, shape: TrainShape) =>
  emitDfineTrainForward(b, net, images, shape.batch, { height: shape.height, width: shape.width, dnSlots: dfineDnSlots(shape.maxTargets) });

export const dfineAssigner: HostAssigner = {
  emitPredictions(b, network, images, shape) {
    const rec = dfineTrainOutputRecord(forward(b, asDfine(network), images, shape));
    // The host reads logits, boxes and ref0; the corner logits stay in the graph.
    return Object.fromEntries(Object.entries(rec).filter(([k]) => !k.endsWith('.pred_corners')));
  },
  inputs: (shape, _nc, network) => dfineLossInputSpecs(lossContext(asDfine(network), shape, null)),
  assign(predictions, targets, shape, _nc, _draws, network) {
    const gts = imageTargets(targets);
    return dfineLossInputs(predictions, gts, lossContext(asDfine(network), shape, gts)).inputs;
  },
  draws: {
    specs: (shape) => dfineDnInputSpecs(shape.batch, dfineDnSlots(shape.maxTargets)),
    make: (targets, shape, nc, rand) => drawDenoising(imageTargets(targets), { nc, rand, slots: dfineDnSlots(shape.maxTargets) }).inputs,
  },
};

/**
 * The original's FlatCosineScheduler per optimizer step k: linear warm-up from warmup_lr_start
 * (clamped to lr0) over warmup_epochs, flat at lr0, then cosine to lr0 min_lr_ratio over the last
 * no_aug_epochs.
 */
export function dfineSchedule(c: ScheduleInputs): { lr(step: number): number } {
  const warm = c.warmupEpochs * c.stepsPerEpoch;
  const total = c.epochs * c.stepsPerEpoch;
  const cosine = c.noAugEpochs * c.stepsPerEpoch;
  const start = Math.min(c.warmupLrStart, c.lr0);
  const min = c.lr0 * c.minLrRatio;
  const flatEnd = total - cosine;
  return {
    lr(k) {
      if (warm > 0 && k <= warm) return start + (c.lr0 - start) * (k / warm);
      if (k <= flatEnd) return c.lr0;
      const progress = Math.min(1, (k - flatEnd) / Math.max(1, cosine));
      return min + 0.5 * (c.lr0 - min) * (1 + Math.cos(Math.PI * progress));
    },
  };
}

/** The training hooks of D-FINE or DEIM (`variant`): one network, the class term and the defaults differ. */
export function dfineTrainingHooks(variant: DfineVariant, create: (size: string, nc: number, sd: StateDict | null) => DetectionNetwork): TrainingHooks {
  return {
    lossNames: lossNamesOf(CLASS_LOSS[variant]),
    emitLoss(b, network, inputs, shape) {
      const net = asDfine(network);
      const out = forward(b, net, inputs.images, shape);
      return b.scope('loss', () => emitDfineLoss(b, out, inputs.assigned, CLASS_LOSS[net.variant]));
    },
    assigner: dfineAssigner,
    defaults: variant === 'deim' ? DEIM_TRAIN_DEFAULTS : DFINE_TRAIN_DEFAULTS,
    adaptClasses(sd, size, nc) {
      // The original rebuilds at nc and copies every tensor whose shape still matches.
      const fresh = create(size, nc, null);
      const keep = new Map<string, HostTensor>();
      for (const [k, p] of fresh.namedTensors()) {
        const t = sd.get(k);
        keep.set(k, t && t.dims.join(',') === p.dims.join(',') ? t : p.value);
      }
      return create(size, nc, keep);
    },
    initialize: (network, seed) => initializeDfine(asDfine(network), seed),
    paramGroups: (trainable, cfg, network) => {
      const net = asDfine(network);
      return dfineParamGroups(trainable, { ...cfg, backboneLrMult: BACKBONE_LR_MULT[net.variant][net.options.size] });
    },
    augment: DFINE_AUGMENT,
    // DEIM's transform gets the original image and resizes it once; D-FINE's dataset pre-resizes it.
    ...(variant === 'deim' ? { unresizedSamples: true } : {}),
    schedule: dfineSchedule,
    multiScale: DFINE_MULTI_SCALE,
  };
}
