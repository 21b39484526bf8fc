/**
 * RF-DETR's AdamW parameter groups, as the original builds them for detection: one group per
 * parameter, in three runs:
 *   1. every parameter outside the DINOv2 encoder and the decoder (projector, two-stage heads,
 *      class/box heads, query tables): lr0, the run's weight decay (norms and biases included);
 *   2. the DINOv2 encoder (`backbone.0.encoder.*`): an absolute lr of
 *      lr_encoder * vit_decay^(num_layers + 1 - layer_id) * component_decay^2, independent of lr0;
 *      no decay for names holding gamma, pos_embed, rel_pos, bias, norm or embeddings (LayerScale's
 *      `lambda1` keeps its decay);
 *   3. the decoder (`transformer.decoder.*`): lr0 * component_decay.
 * Each group's `lrMult` is its lr / lr0, and the schedule sets lr(t) x lrMult on every group from the
 * first step on. The order is the original's (named_parameters within each run), so the optimizer
 * state_dict lines up with the original's.
 */
import type { TrainingHooks } from '../registry.ts';
import { RFDETR_COMMON as C } from './config.ts';

/** The original's `lr_encoder`, `lr_vit_layer_decay` and `lr_component_decay` (every detection size). */
export const RFDETR_LR = { lrEncoder: 1.5e-4, vitLayerDecay: 0.8, componentDecay: 0.7 } as const;

/** Decay depth: the last stage tap + 1 (13): embeddings sit at 0, layer i at i + 1, the rest at 14 (exponent 0). */
const NUM_LAYERS = C.outFeatureIndexes[C.outFeatureIndexes.length - 1]! + 1;

type ParamGroupSpec = ReturnType<NonNullable<TrainingHooks['paramGroups']>>[number];

const ENCODER = 'backbone.0.encoder';
const DECODER = 'transformer.decoder';

/** The layer id of an encoder key: 0 for the embeddings, i + 1 inside `.layer.{i}.`, else num_layers + 1. */
export function rfdetrLayerId(key: string): number {
  if (!key.startsWith('backbone')) return NUM_LAYERS + 1;
  if (key.includes('embeddings')) return 0;
  const at = key.indexOf('.layer.');
  if (at >= 0 && !key.includes('.residual.')) return Number(key.slice(at + '.layer.'.length).split('.')[0]) + 1;
  return NUM_LAYERS + 1;
}

/** The absolute learning rate of an encoder key. */
export function rfdetrEncoderLr(key: string): number {
  return RFDETR_LR.lrEncoder * RFDETR_LR.vitLayerDecay ** (NUM_LAYERS + 1 - rfdetrLayerId(key)) * RFDETR_LR.componentDecay ** 2;
}

/** Encoder names that take no weight decay (substrings). */
export function rfdetrEncoderNoDecay(key: string): boolean {
  return ['gamma', 'pos_embed', 'rel_pos', 'bias', 'norm', 'embeddings'].some((s) => key.includes(s));
}

/** The groups over the trainable keys (state_dict order), given the run's lr0 and weight decay. */
export function rfdetrParamGroups(trainable: readonly string[], cfg: { weightDecay: number; lr0: number }): ParamGroupSpec[] {
  const baseLr = Math.max(cfg.lr0, 1e-12);
  const one = (key: string, lr: number, weightDecay: number): ParamGroupSpec => ({ name: key, keys: [key], weightDecay, lrMult: lr / baseLr });
  const encoder = trainable.filter((k) => k.includes(ENCODER));
  const rest = trainable.filter((k) => !k.includes(ENCODER));
  const decoder = rest.filter((k) => k.includes(DECODER));
  const decoderLr = cfg.lr0 * RFDETR_LR.componentDecay;
  return [
    ...rest.filter((k) => !k.includes(DECODER)).map((k) => one(k, cfg.lr0, cfg.weightDecay)),
    ...encoder.map((k) => one(k, rfdetrEncoderLr(k), rfdetrEncoderNoDecay(k) ? 0 : cfg.weightDecay)),
    ...decoder.map((k) => one(k, decoderLr, cfg.weightDecay)),
  ];
}
