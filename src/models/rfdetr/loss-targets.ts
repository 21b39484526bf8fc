/**
 * The host half of RF-DETR's criterion: from the train-mode forward's predictions, the grouped
 * Hungarian matching of every term (matcher.ts) and what the original computes without gradient
 * -- IA-BCE's detached targets t = max(p^0.25 IoU^0.75, 0.01) from the matched boxes and
 * sigmoid(logits), num_boxes, the logged class and cardinality errors -- as dense tensors the loss
 * graph (loss.ts) multiplies in; the proposal order of the forward goes with them.
 */
import type { HostTensor } from '../../graph/tensor.ts';
import { boxIou, type ImageTargets, type Match } from '../detr/matching.ts';
import type { HostTensorSpec } from '../registry.ts';
import { rfdetrMatch } from './matcher.ts';
import { RFDETR_IA_BCE, RFDETR_LOSS_INPUT as IN, rfdetrLossTerms } from './loss-terms.ts';
import { RFDETR_TOPK_INDEX } from './train-outputs.ts';

const f = Math.fround;

export interface RfdetrLossContext {
  batch: number;
  /** Logit columns, nc + 1. */
  classes: number;
  /** Decoder layers L. */
  layers: number;
  /** Groups (13) and query slots per group (300). */
  groups: number;
  queries: number;
  /** Proposals per group, min(queries, tokens). */
  k: number;
}

/** Shapes of every loss-graph input for a context (fixed per train shape). */
export function rfdetrLossInputSpecs(ctx: RfdetrLossContext): Record<string, HostTensorSpec> {
  const { batch: B, classes: K, groups: G } = ctx;
  const out: Record<string, HostTensorSpec> = {};
  for (const t of rfdetrLossTerms(ctx.layers)) {
    const S = t.source === 'enc' ? G * ctx.k : G * ctx.queries;
    for (const name of [IN.cePos(t.suffix), IN.ceNeg(t.suffix), IN.ceFree(t.suffix)]) out[name] = { dtype: 'float32', dims: [B, S, K] };
    out[IN.boxMask(t.suffix)] = { dtype: 'float32', dims: [B, S, 1] };
    out[IN.boxTarget(t.suffix)] = { dtype: 'float32', dims: [B, S, 4] };
    out[IN.cardinality(t.suffix)] = { dtype: 'float32', dims: [] };
  }
  out[IN.classError] = { dtype: 'float32', dims: [] };
  out[IN.numBoxes] = { dtype: 'float32', dims: [] };
  out[IN.matchedPerImage] = { dtype: 'float32', dims: [] };
  out[RFDETR_TOPK_INDEX] = { dtype: 'int64', dims: [B, G * ctx.k] };
  return out;
}

type Preds = Readonly<Record<string, HostTensor>>;

function argmax(x: Float32Array, o: number, n: number): number {
  let best = 0;
  for (let c = 1; c < n; c++) if (x[o + c]! > x[o + best]!) best = c;
  return best;
}

const scalar = (v: number): HostTensor => ({ dtype: 'float32', dims: [], data: Float32Array.of(v) });

/** The loss graph's host inputs for one batch, and each term's matching (by suffix). */
export function rfdetrLossInputs(preds: Preds, targets: readonly ImageTargets[], ctx: RfdetrLossContext): { inputs: Record<string, HostTensor>; matches: Record<string, Match[]> } {
  const { batch: B, classes: K } = ctx;
  const specs = rfdetrLossInputSpecs(ctx);
  const inputs: Record<string, HostTensor> = {};
  const tensor = (name: string, fill = 0): Float32Array => {
    const dims = specs[name]!.dims;
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(fill);
    inputs[name] = { dtype: 'float32', dims, data };
    return data;
  };
  const numGts = targets.map((t) => t.labels.length);
  const numBoxes = Math.max(numGts.reduce((a, b) => a + b, 0) * ctx.groups, 1);
  const matches: Record<string, Match[]> = {};
  for (const t of rfdetrLossTerms(ctx.layers)) {
    const logitsT = preds[`${t.source}.pred_logits`];
    const boxesT = preds[`${t.source}.pred_boxes`];
    if (!logitsT || !boxesT) throw new Error(`RF-DETR loss: the predictions lack ${t.source}.pred_logits/pred_boxes`);
    const logits = logitsT.data as Float32Array;
    const boxes = boxesT.data as Float32Array;
    const S = logitsT.dims[1]!;
    const m = rfdetrMatch({ logits, boxes, batch: B, queries: S, nc: K }, targets, ctx.groups);
    matches[t.suffix] = m;
    const pos = tensor(IN.cePos(t.suffix));
    const neg = tensor(IN.ceNeg(t.suffix));
    const free = tensor(IN.ceFree(t.suffix), 1);
    const mask = tensor(IN.boxMask(t.suffix));
    const target = tensor(IN.boxTarget(t.suffix));
    for (let r = 0; r < B * S; r++) target.set([0.5, 0.5, 1, 1], r * 4);
    let correct = 0;
    let matched = 0;
    m.forEach((mt, img) => mt.queries.forEach((q, j) => {
      const row = img * S + q;
      const g = mt.targets[j]!;
      const cls = targets[img]!.labels[g]!;
      const iou = boxIou(boxes, row * 4, targets[img]!.boxes, g * 4);
      const p = f(1 / (1 + Math.exp(-logits[row * K + cls]!)));
      const { alpha, minTarget } = RFDETR_IA_BCE;
      const soft = Math.max(f(f(p ** alpha) * f(iou ** (1 - alpha))), f(minTarget));
      pos[row * K + cls] = soft;
      neg[row * K + cls] = f(1 - soft);
      free[row * K + cls] = 0;
      mask[row] = 1;
      target.set(targets[img]!.boxes.subarray(g * 4, g * 4 + 4), row * 4);
      if (argmax(logits, row * K, K) === cls) correct++;
      matched++;
    }));
    // Predicted objects: queries whose top class is not the extra column, against the target count.
    let card = 0;
    for (let img = 0; img < B; img++) {
      let objects = 0;
      for (let q = 0; q < S; q++) if (argmax(logits, (img * S + q) * K, K) !== K - 1) objects++;
      card += Math.abs(objects - numGts[img]!);
    }
    inputs[IN.cardinality(t.suffix)] = scalar(card / B);
    if (t.suffix === '') {
      inputs[IN.classError] = scalar(matched > 0 ? 100 - (100 * correct) / matched : 100);
      inputs[IN.matchedPerImage] = scalar(matched / B);
    }
  }
  inputs[IN.numBoxes] = scalar(numBoxes);
  const topk = preds[RFDETR_TOPK_INDEX];
  if (!topk) throw new Error(`RF-DETR loss: the predictions lack ${RFDETR_TOPK_INDEX}`);
  // The assignment graph's outputs are float32 (token indices < 2^24 are exact there).
  inputs[RFDETR_TOPK_INDEX] = topk.dtype === 'int64' ? topk : { dtype: 'int64', dims: [...topk.dims], data: BigInt64Array.from(topk.data as Float32Array, (v) => BigInt(v)) };
  return { inputs, matches };
}
