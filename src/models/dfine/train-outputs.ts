/**
 * The contract between D-FINE's train-mode forward (train-forward.ts) and its matcher and losses:
 * the original's train output dict as graph values, and the denoising draws the
 * forward takes as inputs (the host makes them, denoising.ts, or a test injects the
 * fixture's). Kept small and stable: the loss code is written against it.
 *
 * | original (train mode)                      | here                                             | shape                  |
 * |--------------------------------------------|--------------------------------------------------|------------------------|
 * | pred_logits / pred_boxes / pred_corners    | matching.layers[L-1].logits / boxes / corners    | [B,300,nc] [B,300,4] [B,300,4(R+1)] |
 * | ref_points (every layer)                   | matching.refPoints (ref0, detached)              | [B,300,4]              |
 * | aux_outputs[i] (i < L-1)                   | matching.layers[i]                               | as above               |
 * | aux teacher_corners / teacher_logits       | matching.layers[L-1].corners / .logits           |                        |
 * | pre_outputs                                | matching.pre                                     | [B,300,nc] [B,300,4]   |
 * | enc_aux_outputs[0]                         | enc (gathered enc logits, sigmoid(enc box unact)) | [B,300,nc] [B,300,4]  |
 * | dn_outputs[i] (all L layers)               | denoising.layers[i] (teacher: layers[L-1])       | [B,N,...], N = dnSlots |
 * | dn_pre_outputs                             | denoising.pre                                    | [B,N,nc] [B,N,4]       |
 * | up, reg_scale                              | up, regScale (host numbers; frozen), project = W(n) |                     |
 *
 * Boxes are cx,cy,w,h normalised to [0, 1]; logits are raw (LQE included for layers, not for pre
 * and enc). Gradient stops are the original's: refPoints is detached, the corner chain is not.
 * Denoising slots at or after `DfineDnDraw.numDn` are padding (the host may pad the draw to a fixed
 * slot count so one session serves every batch): no query sees them, they see only themselves, and
 * the losses must ignore them.
 *
 * The forward: `emitDfineTrainForward(b, network, images, batch, { height, width, dnSlots, injectTopk })` in
 * train-forward.ts (b.training set: BatchNorm on batch statistics, running stats as
 * `b.runningStatOutputs`); with `dnSlots` > 0 it declares the DFINE_DN_INPUTS itself.
 */
import type { HostTensor } from '../../graph/tensor.ts';

/** Graph input names of the injected denoising draws (the fixture's tensor names). */
export const DFINE_DN_INPUTS = {
  /** int64 [B, N]: post-noise classes, nc = padding (feeds denoising_class_embed). */
  queryClass: 'dn.input_query_class',
  /** float32 [B, N, 4]: post-noise references in logit space. */
  queryBboxUnact: 'dn.input_query_bbox_unact',
  /** bool [N + 300, N + 300]: self-attention mask, true = blocked. */
  attnMask: 'dn.attn_mask',
} as const;

/**
 * The selected proposal tokens, int64 [B, 300]: an output of the assignment forward
 * (`DfineTrainOutputs.topk`) and, with `injectTopk`, an input of the loss graph's forward, so both
 * graphs order their queries alike (near-tied proposals would otherwise swap between them).
 */
export const DFINE_TOPK_INDEX = 'enc_topk_index';

/** The denoising inputs' dtypes and shapes for `batch` images and `slots` denoising queries. */
export function dfineDnInputSpecs(batch: number, slots: number, queries = 300): Record<string, { dtype: 'int64' | 'float32' | 'bool'; dims: number[] }> {
  return {
    [DFINE_DN_INPUTS.queryClass]: { dtype: 'int64', dims: [batch, slots] },
    [DFINE_DN_INPUTS.queryBboxUnact]: { dtype: 'float32', dims: [batch, slots, 4] },
    [DFINE_DN_INPUTS.attnMask]: { dtype: 'bool', dims: [slots + queries, slots + queries] },
  };
}

/** Class logits and boxes of one head. */
export interface DfineHeadOutputs {
  /** [B, Q, nc] raw logits. */
  logits: string;
  /** [B, Q, 4] cx, cy, w, h in [0, 1]. */
  boxes: string;
}

/** One decoder layer's outputs (score head + LQE, FDR box, corner logits). */
export interface DfineLayerOutputs extends DfineHeadOutputs {
  /** [B, Q, 4 * (reg_max + 1)] distribution logits, edge-major (left, top, right, bottom). */
  corners: string;
}

/** The outputs of one query split (the 300 matching queries, or the denoising slots). */
export interface DfineQuerySplit {
  /** Queries in this split (300, or the denoising slot count). */
  queries: number;
  /** Every decoder layer, 0..L-1; the last is the main output and the DDF teacher. */
  layers: DfineLayerOutputs[];
  /** ref0 = layer 0's pre-box, detached: the `ref_points` of every layer. [B, Q, 4]. */
  refPoints: string;
  /** Layer 0's pre head (pre_bbox_head + dec_score_head[0], no LQE). */
  pre: DfineHeadOutputs;
}

export interface DfineTrainOutputs {
  batch: number;
  nc: number;
  /** reg_max (32): corners have 4 * (regMax + 1) columns. */
  regMax: number;
  /** decoder.up (0.5) and decoder.reg_scale (4, or 8 for x): frozen, read from the checkpoint. */
  up: number;
  regScale: number;
  /** W(n), the regMax + 1 bin values (float32 as the train-mode original computes them). */
  project: Float32Array;
  matching: DfineQuerySplit;
  /** Null when the forward was emitted without denoising. */
  denoising: DfineQuerySplit | null;
  /** The encoder proposals at the top-k tokens (not detached). [B, 300, nc] / [B, 300, 4]. */
  enc: DfineHeadOutputs;
  /** int64 [B, 300]: the proposal tokens (TopK's, or the injected DFINE_TOPK_INDEX); absent for fed outputs. */
  topk?: string;
}

/**
 * One batch's denoising draws, as the original's `get_contrastive_denoising_training_group` makes
 * them. `inputs` are the forward's feeds (DFINE_DN_INPUTS); the rest is what the
 * losses need (`dn_meta`).
 */
export interface DfineDnDraw {
  inputs: Record<string, HostTensor>;
  /** G_max: most ground truths in one image of the batch (0: no denoising queries). */
  maxGt: number;
  /** Groups G = max(100 div G_max, 1) (0 when maxGt is 0). */
  numGroup: number;
  /** Real denoising queries, 2 * G_max * G (the original's dn_num_split[0]). */
  numDn: number;
  /** Slots in the inputs (numDn, or more when padded). */
  slots: number;
  /** Per image: the positive slots holding a real gt, ascending (group-major). */
  positiveIdx: Int32Array[];
}

/** Output names and dims of every train value, for a forward-only graph (HostAssigner.emitPredictions). */
export function dfineTrainOutputRecord(out: DfineTrainOutputs): Record<string, { value: string; dims: number[] }> {
  const rec: Record<string, { value: string; dims: number[] }> = {};
  const bins = 4 * (out.regMax + 1);
  const add = (prefix: string, s: DfineQuerySplit): void => {
    const q = s.queries;
    s.layers.forEach((l, i) => {
      rec[`${prefix}layer${i}.pred_logits`] = { value: l.logits, dims: [out.batch, q, out.nc] };
      rec[`${prefix}layer${i}.pred_boxes`] = { value: l.boxes, dims: [out.batch, q, 4] };
      rec[`${prefix}layer${i}.pred_corners`] = { value: l.corners, dims: [out.batch, q, bins] };
    });
    rec[`${prefix}ref_points`] = { value: s.refPoints, dims: [out.batch, q, 4] };
    rec[`${prefix}pre.pred_logits`] = { value: s.pre.logits, dims: [out.batch, q, out.nc] };
    rec[`${prefix}pre.pred_boxes`] = { value: s.pre.boxes, dims: [out.batch, q, 4] };
  };
  add('', out.matching);
  if (out.denoising) add('dn.', out.denoising);
  const q = out.matching.queries;
  rec['enc.pred_logits'] = { value: out.enc.logits, dims: [out.batch, q, out.nc] };
  rec['enc.pred_boxes'] = { value: out.enc.boxes, dims: [out.batch, q, 4] };
  return rec;
}
