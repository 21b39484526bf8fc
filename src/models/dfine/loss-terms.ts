/**
 * The terms of D-FINE's criterion and the names of the host tensors that feed the
 * loss graph: which output each term reads, which matching its class loss uses, whether it has the
 * local (FGL, DDF) losses. Shared by the host side (loss-targets.ts) and the graph (loss.ts).
 */

/** Loss weights, applied inside the criterion as the original does. */
export const DFINE_LOSS_WEIGHTS = { vfl: 1, bbox: 5, giou: 2, fgl: 0.15, ddf: 1.5 } as const;
/** VFL's alpha and gamma as the trainer builds the criterion. */
export const DFINE_VFL = { alpha: 0.75, gamma: 2 } as const;
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

/** The loss keys of one term (`loss_vfl_aux_0`, ...). */
export function termKeys(t: DfineLossTerm): string[] {
  const names = ['vfl', 'bbox', 'giou', ...(t.fgl ? ['fgl'] : []), ...(t.layer !== null && (t.ddf || t.split === 'denoising') ? ['ddf'] : [])];
  return names.map((n) => `loss_${n}${t.suffix}`);
}

/** Loss-graph input names (host tensors). */
export const LOSS_INPUT = {
  /** float32 [B, Q, nc]: the VFL soft target IoU x one-hot. */
  vflTarget: (suffix: string) => `dfine.vfl_target${suffix}`,
  /** float32 [B, Q, nc]: the VFL weight (alpha sigma^gamma (1 - t) + target) / num_boxes (all detached). */
  vflWeight: (suffix: string) => `dfine.vfl_weight${suffix}`,
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
