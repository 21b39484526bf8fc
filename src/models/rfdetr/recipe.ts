/**
 * RF-DETR's training recipe as values: the original's defaults (RFDETRConfig), its AdamW groups
 * (layer-wise LR decay over the DINOv2 encoder, the decoder at lr0 x 0.7), the "step" schedule and
 * the per-step multi-scale size (CPython's random.Random(step).choice over 11 sizes) and the
 * per-sample pipeline.
 */
import type { AugmentRecipe } from '../../data/recipe.ts';
import { LibreYOLOError } from '../../errors.ts';
import { PythonRandom } from '../../util/python-random.ts';
import { lrDropFactor, type ScheduleInputs } from '../registry.ts';
import { RFDETR_COMMON } from './config.ts';

/** RFDETRConfig where it differs from the core defaults (mosaic, mixup, HSV and the affine off). */
export const RFDETR_TRAIN_DEFAULTS: Readonly<Record<string, unknown>> = {
  epochs: 100, batch: 4, nbs: 16, lr0: 1e-4, optimizer: 'adamw', weight_decay: 1e-4, warmup_epochs: 0, lr_drop: 100,
  clip_max_norm: 0.1, ema: true, ema_decay: 0.993, ema_tau: 100, multi_scale: true, expanded_scales: true,
  crop_resize_prob: 0.5, flip_prob: 0.5, workers: 0,
  mosaic_prob: 0, mixup_prob: 0, hsv_prob: 0, degrees: 0, translate: 0, shear: 0, max_labels: 300, name: 'rfdetr_exp',
};

/**
 * The per-sample pipeline (RFDETRDetTransform): flip first, then with crop_resize_prob (samples with
 * boxes) the shortest side to 400/500/600 and a square crop of 384..min(600, h, w), then the
 * INTER_LINEAR square stretch onto the loader's canvas (rfdetrTrainCanvas with multi-scale), boxes
 * with a side <= 1 px dropped. No mosaic, mixup, HSV or affine.
 */
export const RFDETR_AUGMENT: AugmentRecipe = [
  { step: 'pre_flip', prob: 'flip_prob' },
  { step: 'crop_resize', prob: 'crop_resize_prob', scales: [400, 500, 600], maxSize: 600, minCrop: 384 },
  { step: 'stretch_linear' },
];

/** The LR options of every RF-DETR size (lr_encoder, lr_vit_layer_decay, lr_component_decay). */
export const RFDETR_LR = { encoder: 1.5e-4, vitLayerDecay: 0.8, componentDecay: 0.7 } as const;

const ENCODER = 'backbone.0.encoder.';
const DECODER = 'transformer.decoder.';
/** Layer ids run 0 (embeddings) .. numLayers + 1 (the rest: the final layernorm), numLayers = last stage tap + 1. */
const NUM_LAYERS = Math.max(...RFDETR_COMMON.outFeatureIndexes) + 1;
const NO_DECAY = ['gamma', 'pos_embed', 'rel_pos', 'bias', 'norm', 'embeddings'];

/** The encoder layer id of a `backbone.0.encoder.*` key: 0 embeddings, i + 1 for `.layer.{i}.`, numLayers + 1 otherwise. */
function encoderLayerId(key: string): number {
  if (key.includes('embeddings')) return 0;
  const m = /\.layer\.(\d+)\./.exec(key);
  return m ? Number(m[1]) + 1 : NUM_LAYERS + 1;
}

/** The absolute LR of an encoder key: lr_encoder x 0.8^(numLayers + 1 - id) x 0.7^2 (independent of lr0). */
export function rfdetrEncoderLr(key: string): number {
  return RFDETR_LR.encoder * RFDETR_LR.vitLayerDecay ** (NUM_LAYERS + 1 - encoderLayerId(key)) * RFDETR_LR.componentDecay ** 2;
}

export interface RfdetrParamGroup { name: string; keys: string[]; weightDecay: number; lrMult: number }

/**
 * The original's AdamW groups over the trainable keys, empty ones left out: everything outside the
 * encoder and decoder at lr0 with weight decay (norms and biases too); the encoder per layer id,
 * split by decay (none for keys holding gamma, pos_embed, rel_pos, bias, norm or embeddings), at
 * its absolute LR; the decoder at lr0 x 0.7. lrMult = group LR / lr0, so with the schedule at lr0
 * the encoder keeps its LR whatever lr0 is.
 */
export function rfdetrParamGroups(trainable: readonly string[], cfg: { weightDecay: number; lr0: number }): RfdetrParamGroup[] {
  if (!(cfg.lr0 > 0)) throw new LibreYOLOError('config_range_error', `train: lr0 must be > 0, got ${cfg.lr0}`);
  const other: string[] = [], decoder: string[] = [];
  const encoder = new Map<string, RfdetrParamGroup>();
  for (const key of trainable) {
    if (key.startsWith(DECODER)) { decoder.push(key); continue; }
    if (!key.startsWith(ENCODER)) { other.push(key); continue; }
    const id = encoderLayerId(key);
    const decay = !NO_DECAY.some((s) => key.includes(s));
    const name = `encoder.${id}.${decay ? 'wd' : 'no_wd'}`;
    let g = encoder.get(name);
    if (!g) encoder.set(name, (g = { name, keys: [], weightDecay: decay ? cfg.weightDecay : 0, lrMult: rfdetrEncoderLr(key) / cfg.lr0 }));
    g.keys.push(key);
  }
  const byId = [...encoder.values()].sort((a, b) => Number(a.name.split('.')[1]) - Number(b.name.split('.')[1]));
  return [
    { name: 'other', keys: other, weightDecay: cfg.weightDecay, lrMult: 1 },
    ...byId,
    { name: 'decoder', keys: decoder, weightDecay: cfg.weightDecay, lrMult: RFDETR_LR.componentDecay },
  ].filter((g) => g.keys.length > 0);
}

/**
 * The original's "step" schedule per optimizer step k: lr0, after a linear warm-up from
 * min(warmup_lr_start, lr0) over warmup_epochs when there is one; x 0.1 from lr_drop epochs on.
 */
export function rfdetrSchedule(c: ScheduleInputs): { lr(step: number): number } {
  const warm = c.warmupEpochs * c.stepsPerEpoch;
  const start = Math.min(c.warmupLrStart, c.lr0);
  return {
    lr(k) {
      const base = warm > 0 && k <= warm ? start + (c.lr0 - start) * (k / warm) : c.lr0;
      return base * lrDropFactor(k, c);
    },
  };
}

/** The multi-scale sizes of native resolution S: (S/32 + o) x 32 for o = -5..5, those >= 64, ascending. */
export function rfdetrMultiScales(resolution: number): number[] {
  if (!Number.isInteger(resolution) || resolution <= 0 || resolution % 32 !== 0) {
    throw new LibreYOLOError('invalid_imgsz', `RF-DETR multi-scale needs a resolution that is a positive multiple of 32, got ${resolution}`);
  }
  const out: number[] = [];
  for (let o = -5; o <= 5; o++) if ((resolution / 32 + o) * 32 >= 64) out.push((resolution / 32 + o) * 32);
  return out;
}

/** The square side of optimizer step `step` (0-based over the run): random.Random(step).choice(scales); every micro-batch of a step shares it. */
export function rfdetrStepScale(step: number, resolution: number): number {
  return new PythonRandom(step).choice(rfdetrMultiScales(resolution));
}

/** The train transform's square canvas: the largest multi-scale size, (S/32 + 5) x 32 (n 544, s 672, m 736, l 864). */
export function rfdetrTrainCanvas(resolution: number): number {
  return Math.max(...rfdetrMultiScales(resolution));
}
