/**
 * The terms of D-FINE's criterion and the names of the host tensors that feed the
 * loss graph: which output each term reads, which matching its class loss uses, whether it has the
 * local (FGL, DDF) losses. Shared by the host side (loss-targets.ts) and the graph (loss.ts).
 * DEIM's criterion is the same but for the classification term (MAL in place of VFL).
 */
import type { DfineVariant } from './config.ts';

const f = Math.fround;

/** Loss weights, applied inside the criterion as the original does (the class term, VFL or MAL, weighs 1). */
export const DFINE_LOSS_WEIGHTS = { cls: 1, bbox: 5, giou: 2, fgl: 0.15, ddf: 1.5 } as const;
/** VFL's alpha and gamma as the trainer builds the criterion. */
export const DFINE_VFL = { alpha: 0.75, gamma: 2 } as const;
/** MAL's gamma (DEIMCriterion; mal_alpha is None). */
export const DEIM_MAL = { gamma: 1.5 } as const;

/**
 * The classification term: BCE-with-logits against a soft target with a per-entry weight, both
 * detached, so the host computes them and the loss graph is the same for either. With t the one-hot
 * of a matched query's class, s its detached IoU and sigma the detached sigmoid:
 * - VFL (D-FINE): target s t, weight alpha sigma^gamma (1 - t) + s t;
 * - MAL (DEIM, matchability-aware): target (s t)^gamma, weight sigma^gamma (1 - t) + t, so a matched
 *   class always weighs 1 however low its IoU.
 */
export interface ClassLoss {
  /** The key stem: `loss_vfl*` or `loss_mal*`, and the logged component. */
  readonly key: 'vfl' | 'mal';
  /** The soft target at a matched query's own class, from its IoU. */
  target(iou: number): number;
  /** The weight there, from that target. */
  positiveWeight(target: number): number;
  /** The weight of every other entry, from the detached sigmoid. */
  negativeWeight(sigma: number): number;
}

export const CLASS_LOSS: Record<DfineVariant, ClassLoss> = {
  dfine: { key: 'vfl', target: (iou) => iou, positiveWeight: (q) => q, negativeWeight: (s) => f(DFINE_VFL.alpha * f(s ** DFINE_VFL.gamma)) },
  deim: { key: 'mal', target: (iou) => f(iou ** DEIM_MAL.gamma), positiveWeight: () => 1, negativeWeight: (s) => f(s ** DEIM_MAL.gamma) },
};

/** Logged components, each the sum of its family of keys: the class term's, then bbox, giou, fgl, ddf. */
export function lossNamesOf(cls: ClassLoss): readonly string[] {
  return [cls.key, 'bbox', 'giou', 'fgl', 'ddf'];
}
/** DDF temperature. */
export const DFINE_DDF_T = 5;

export interface DfineLossTerm {
  /** Key suffix: `` (main), `_aux_<i>`, `_pre`, `_enc_0`, `_dn_<i>`, `_dn_pre`. */
  suffix: string;
  split: 'matching' | 'denoising';
  /** Prediction name prefix in the train output record: `layer<i>`, `pre`, `enc`, `dn.layer<i>`, `dn.pre`. */
  source: string;
  /** Decoder layer, for layer outputs (null for pre and enc). */
  layer: number | null;
  /** FGL for every layer output, DDF for every layer but the teacher (the last) of a split. */
  fgl: boolean;
  ddf: boolean;
}

/** Every term, in the original's key order (D-FINE n: 38 keys). */
export function dfineLossTerms(layers: number, denoising: boolean): DfineLossTerm[] {
  const layerTerm = (split: DfineLossTerm['split'], i: number, suffix: string): DfineLossTerm => ({
    suffix, split, source: `${split === 'denoising' ? 'dn.' : ''}layer${i}`, layer: i, fgl: true, ddf: i < layers - 1 && (split === 'denoising' || suffix !== ''),
  });
  const terms: DfineLossTerm[] = [layerTerm('matching', layers - 1, '')];
  for (let i = 0; i < layers - 1; i++) terms.push(layerTerm('matching', i, `_aux_${i}`));
  terms.push({ suffix: '_pre', split: 'matching', source: 'pre', layer: null, fgl: false, ddf: false });
  terms.push({ suffix: '_enc_0', split: 'matching', source: 'enc', layer: null, fgl: false, ddf: false });
  if (denoising) {
    for (let i = 0; i < layers; i++) terms.push(layerTerm('denoising', i, `_dn_${i}`));
    terms.push({ suffix: '_dn_pre', split: 'denoising', source: 'dn.pre', layer: null, fgl: false, ddf: false });
  }
  return terms;
}

/** The loss keys of one term (`loss_vfl_aux_0`, ...; `loss_mal_aux_0` for DEIM). */
export function termKeys(t: DfineLossTerm, cls: ClassLoss): string[] {
  const names = [cls.key, 'bbox', 'giou', ...(t.fgl ? ['fgl'] : []), ...(t.layer !== null && (t.ddf || t.split === 'denoising') ? ['ddf'] : [])];
  return names.map((n) => `loss_${n}${t.suffix}`);
}

/** Loss-graph input names (host tensors). */
export const LOSS_INPUT = {
  /** float32 [B, Q, nc]: the class term's soft target (VFL: IoU x one-hot; MAL: its gamma power). */
  clsTarget: (suffix: string) => `dfine.cls_target${suffix}`,
  /** float32 [B, Q, nc]: the class term's weight / num_boxes (all detached; ClassLoss). */
  clsWeight: (suffix: string) => `dfine.cls_weight${suffix}`,
  /** float32 [B, Q, 1]: 1 / N at matched queries (GO for the matching split, denoising matches), else 0. */
  boxMask: (split: DfineLossTerm['split']) => `dfine.box_mask.${split}`,
  /** float32 [B, Q, 4]: the matched gt box (cx cy w h), a unit box elsewhere (a finite GIoU). */
  boxTarget: (split: DfineLossTerm['split']) => `dfine.box_target.${split}`,
  /** float32 [B, Q, 4, R+1]: FGL soft labels (w_left, w_right at bins j, j+1) x IoU / N. */
  fglLabel: (suffix: string) => `dfine.fgl_label${suffix}`,
  /** float32 [B, Q, 4]: DDF coefficient of each query edge (T^2 x weight x its mean's share). */
  ddfCoef: (suffix: string) => `dfine.ddf_coef${suffix}`,
  /** float32 []: main-matching pairs per image (the logged foreground count). */
  matchedPerImage: 'dfine.matched_per_image',
} as const;
