/**
 * The contract between RF-DETR's train-mode forward (train-forward.ts) and its matcher and losses:
 * the original's train output dict as graph values.
 *
 * | original (train mode)          | here                        | shape                        |
 * |--------------------------------|-----------------------------|------------------------------|
 * | pred_logits / pred_boxes       | layers[L-1].logits / boxes  | [B, G*Q, nc+1] [B, G*Q, 4]   |
 * | aux_outputs[i] (i < L-1)       | layers[i]                   | as above                     |
 * | enc_outputs                    | enc (per-group heads)       | [B, G*k, nc+1] [B, G*k, 4]   |
 *
 * G = 13 groups of Q = 300 query slots, group g in slots g*Q .. g*Q+Q-1; k = min(Q, tokens)
 * proposals per group. Boxes are cx, cy, w, h normalised (no sigmoid, not clamped); logits raw,
 * with the extra column nc. Every decoder box is relative to a reference built on the detached
 * proposals, so the encoder heads learn from the `_enc` losses only.
 */

/**
 * The proposal tokens of every group, int64 [B, G*k], group-major: an output of the assignment
 * forward and an input of the loss graph's (`topkIndex`), so both order their queries alike.
 */
export const RFDETR_TOPK_INDEX = 'rfdetr.enc_topk_index';

/** Class logits and boxes of one output set. */
export interface RfdetrHeadOutputs {
  /** [B, slots, nc+1] raw logits. */
  logits: string;
  /** [B, slots, 4] cx, cy, w, h. */
  boxes: string;
}

export interface RfdetrTrainOutputs {
  batch: number;
  /** Logit columns, nc + 1. */
  classes: number;
  /** Groups (13) and query slots per group (300). */
  groups: number;
  queries: number;
  /** Proposals per group, min(queries, tokens). */
  k: number;
  /** Every decoder layer, 0..L-1; the last is the main output. */
  layers: RfdetrHeadOutputs[];
  /** The encoder proposals (G*k slots, not detached). */
  enc: RfdetrHeadOutputs;
  /** int64 [B, G*k]: TopK's, or the given `topkIndex`; absent for fed outputs. */
  topk?: string;
}

/** Output name prefixes: `layer<i>` and `enc`, each with `.pred_logits` / `.pred_boxes`. */
export function rfdetrTrainOutputRecord(out: RfdetrTrainOutputs): Record<string, { value: string; dims: number[] }> {
  const rec: Record<string, { value: string; dims: number[] }> = {};
  const add = (name: string, h: RfdetrHeadOutputs, slots: number): void => {
    rec[`${name}.pred_logits`] = { value: h.logits, dims: [out.batch, slots, out.classes] };
    rec[`${name}.pred_boxes`] = { value: h.boxes, dims: [out.batch, slots, 4] };
  };
  out.layers.forEach((l, i) => add(`layer${i}`, l, out.groups * out.queries));
  add('enc', out.enc, out.groups * out.k);
  return rec;
}
