/**
 * The terms of RF-DETR's criterion (`SetCriterion` with labels, boxes, cardinality) and the names
 * of the host tensors that feed the loss graph; shared by the host side (loss-targets.ts) and the
 * graph (loss.ts).
 */

/** weight_dict: every term's loss_ce / loss_bbox / loss_giou weigh 1 / 5 / 2 in the total. */
export const RFDETR_LOSS_WEIGHTS = { ce: 1, bbox: 5, giou: 2 } as const;
/** IA-BCE: the positive target is p^alpha IoU^(1-alpha), clamped at 0.01; negatives weigh p^gamma. */
export const RFDETR_IA_BCE = { alpha: 0.25, gamma: 2, minTarget: 0.01 } as const;

/** Logged components, each the weighted sum of its keys over the terms (they add up to the total). */
export const RFDETR_LOSS_NAMES = ['ce', 'bbox', 'giou'] as const;

export interface RfdetrLossTerm {
  /** Key suffix: `` (final layer), `_<i>` (aux layer i), `_enc`. */
  suffix: string;
  /** Prediction name prefix in the train output record: `layer<i>` or `enc`. */
  source: string;
}

/** Every term in the original's order: the final layer, each aux layer, the encoder. */
export function rfdetrLossTerms(layers: number): RfdetrLossTerm[] {
  return [
    { suffix: '', source: `layer${layers - 1}` },
    ...Array.from({ length: layers - 1 }, (_, l) => ({ suffix: `_${l}`, source: `layer${l}` })),
    { suffix: '_enc', source: 'enc' },
  ];
}

/** The keys of one term, in the original's order; class_error only for the final layer. */
export function rfdetrTermKeys(t: RfdetrLossTerm): string[] {
  return [`loss_ce${t.suffix}`, ...(t.suffix === '' ? ['class_error'] : []), `loss_bbox${t.suffix}`, `loss_giou${t.suffix}`, `cardinality_error${t.suffix}`];
}

/** Loss-graph input names (host tensors). */
export const RFDETR_LOSS_INPUT = {
  /** float32 [B, S, nc+1]: IA-BCE's positive weight t at matched (query, class) entries, else 0. */
  cePos: (suffix: string) => `rfdetr.ce_pos${suffix}`,
  /** float32 [B, S, nc+1]: the negative weight 1 - t at matched entries, else 0. */
  ceNeg: (suffix: string) => `rfdetr.ce_neg${suffix}`,
  /** float32 [B, S, nc+1]: 1 where the negative weight is p^2 (every unmatched entry), else 0. */
  ceFree: (suffix: string) => `rfdetr.ce_free${suffix}`,
  /** float32 [B, S, 1]: 1 at matched queries, else 0. */
  boxMask: (suffix: string) => `rfdetr.box_mask${suffix}`,
  /** float32 [B, S, 4]: the matched target box (cx cy w h), a unit box elsewhere (a finite GIoU). */
  boxTarget: (suffix: string) => `rfdetr.box_target${suffix}`,
  /** float32 []: the logged cardinality error of a term (no gradient). */
  cardinality: (suffix: string) => `rfdetr.cardinality_error${suffix}`,
  /** float32 []: the final layer's logged class error (no gradient). */
  classError: 'rfdetr.class_error',
  /** float32 []: num_boxes = targets in the batch x groups, at least 1. */
  numBoxes: 'rfdetr.num_boxes',
  /** float32 []: final-layer matched pairs per image (the logged foreground count). */
  matchedPerImage: 'rfdetr.matched_per_image',
} as const;
