/**
 * The host half of D-FINE's criterion: from the train-mode forward's predictions,
 * the matchings (main, per aux layer, pre, enc; their GO union; the denoising matches) and every
 * detached quantity the original computes under no_grad or `.detach()` -- IoUs of matched boxes,
 * the class term's (VFL or MAL) targets and weights from them and sigmoid(logits), FGL bin targets
 * from ref0, DDF weights from the teacher's logits,
 * the num_boxes normalisers -- as dense tensors the loss graph (loss.ts) multiplies in. The loss
 * graph itself then holds only the differentiable parts.
 */
import type { HostTensor } from '../../graph/tensor.ts';
import type { HostTensorSpec } from '../registry.ts';
import { DFINE_DDF_T, LOSS_INPUT, dfineLossTerms, type ClassLoss, type DfineLossTerm } from './loss-terms.ts';
import { boxIou, cxcywhToXyxy as xyxy } from '../detr/matching.ts';
import { denoisingMatches, hungarianMatch, unionMatches, type ImageTargets, type Match, type MatchInput } from './matcher.ts';

export { boxIou } from '../detr/matching.ts';

const f = Math.fround;

export interface DfineLossContext {
  batch: number;
  nc: number;
  /** Decoder layers L. */
  layers: number;
  /** Matching queries (300). */
  queries: number;
  regMax: number;
  regScale: number;
  /** W(n), regMax + 1 values. */
  project: Float32Array;
  /** Denoising: slot count of the forward, real queries, groups and positive slots per image; null without. */
  dn: { slots: number; numDn: number; numGroup: number; positiveIdx: ReadonlyArray<ArrayLike<number>> } | null;
  /** The classification term: D-FINE's VFL or DEIM's MAL (loss-terms.ts CLASS_LOSS). */
  cls: ClassLoss;
}

/** Shapes of every loss-graph input for a context (fixed per train shape). */
export function dfineLossInputSpecs(ctx: DfineLossContext): Record<string, HostTensorSpec> {
  const out: Record<string, HostTensorSpec> = {};
  const { batch: B, nc, regMax } = ctx;
  const qOf = (split: DfineLossTerm['split']): number => (split === 'denoising' ? ctx.dn!.slots : ctx.queries);
  for (const t of dfineLossTerms(ctx.layers, ctx.dn !== null)) {
    const Q = qOf(t.split);
    out[LOSS_INPUT.clsTarget(t.suffix)] = { dtype: 'float32', dims: [B, Q, nc] };
    out[LOSS_INPUT.clsWeight(t.suffix)] = { dtype: 'float32', dims: [B, Q, nc] };
    out[LOSS_INPUT.boxMask(t.split)] = { dtype: 'float32', dims: [B, Q, 1] };
    out[LOSS_INPUT.boxTarget(t.split)] = { dtype: 'float32', dims: [B, Q, 4] };
    if (t.fgl) out[LOSS_INPUT.fglLabel(t.suffix)] = { dtype: 'float32', dims: [B, Q, 4, regMax + 1] };
    if (t.ddf) out[LOSS_INPUT.ddfCoef(t.suffix)] = { dtype: 'float32', dims: [B, Q, 4] };
  }
  out[LOSS_INPUT.matchedPerImage] = { dtype: 'float32', dims: [] };
  return out;
}

const sigmoid = (x: number): number => f(1 / (1 + Math.exp(-x)));

/**
 * FGL targets of one matched query (`bbox2distance` + `translate_gt`): per edge the left bin j and
 * the weights of bins j and j + 1.
 */
export function fglTargets(ref: ArrayLike<number>, ro: number, gt: ArrayLike<number>, go: number, project: Float32Array, regScale: number): Array<{ bin: number; left: number; right: number }> {
  const regMax = project.length - 1;
  const rs = Math.abs(regScale);
  const [x1, y1, x2, y2] = xyxy(gt, go);
  const [cx, cy, w, h] = [ref[ro]!, ref[ro + 1]!, ref[ro + 2]!, ref[ro + 3]!];
  const sx = f(f(w / rs) + 1e-16);
  const sy = f(f(h / rs) + 1e-16);
  const half = f(0.5 * rs);
  const dists = [f(f(f(cx - x1) / sx) - half), f(f(f(cy - y1) / sy) - half), f(f(f(x2 - cx) / sx) - half), f(f(f(y2 - cy) / sy) - half)];
  return dists.map((d) => {
    let j = -1;
    for (let k = 0; k <= regMax; k++) if (f(project[k]! - d) <= 0) j++;
    if (j < 0) return { bin: 0, left: 1, right: 0 };
    if (j >= regMax) return { bin: regMax - 1, left: 0, right: 1 }; // label 31.9, truncated to 31
    const ld = Math.abs(f(d - project[j]!));
    const rd = Math.abs(f(project[j + 1]! - d));
    const right = f(ld / f(ld + rd));
    return { bin: j, left: f(1 - right), right };
  });
}

export interface DfineMatchings {
  /** Class-loss matching per term suffix. */
  byTerm: Record<string, Match[]>;
  /** GO union (boxes and local losses of the matching split). */
  go: Match[];
  /** Denoising matches (null without denoising). */
  dn: Match[] | null;
  numBoxes: number;
  numBoxesGo: number;
  numBoxesDn: number;
}

type Preds = Readonly<Record<string, HostTensor>>;

function matchInput(preds: Preds, source: string, batch: number, nc: number): MatchInput {
  const logits = preds[`${source}.pred_logits`];
  const boxes = preds[`${source}.pred_boxes`];
  if (!logits || !boxes) throw new Error(`D-FINE loss: the predictions lack ${source}.pred_logits/pred_boxes`);
  return { logits: logits.data as Float32Array, boxes: boxes.data as Float32Array, batch, queries: logits.dims[1]!, nc };
}

/** Every matching of a batch, as the criterion's forward makes them. */
export function dfineMatchings(preds: Preds, targets: readonly ImageTargets[], ctx: DfineLossContext): DfineMatchings {
  const terms = dfineLossTerms(ctx.layers, ctx.dn !== null);
  const byTerm: Record<string, Match[]> = {};
  for (const t of terms) if (t.split === 'matching') byTerm[t.suffix] = hungarianMatch(matchInput(preds, t.source, ctx.batch, ctx.nc), targets);
  const aux = terms.filter((t) => t.split === 'matching' && t.suffix !== '').map((t) => byTerm[t.suffix]!);
  const go = unionMatches(byTerm['']!, aux);
  const numGts = targets.map((t) => t.labels.length);
  const numBoxes = Math.max(numGts.reduce((a, b) => a + b, 0), 1);
  const numBoxesGo = Math.max(go.reduce((a, m) => a + m.queries.length, 0), 1);
  let dn: Match[] | null = null;
  let numBoxesDn = 1;
  if (ctx.dn) {
    dn = denoisingMatches(ctx.dn.positiveIdx.map((p) => Array.from(p)), numGts, ctx.dn.numGroup);
    numBoxesDn = numBoxes * ctx.dn.numGroup > 0 ? numBoxes * ctx.dn.numGroup : 1;
    for (const t of terms) if (t.split === 'denoising') byTerm[t.suffix] = dn;
  }
  return { byTerm, go, dn, numBoxes, numBoxesGo, numBoxesDn };
}

/** The loss graph's host inputs for one batch, and the matchings they came from. */
export function dfineLossInputs(preds: Preds, targets: readonly ImageTargets[], ctx: DfineLossContext): { inputs: Record<string, HostTensor>; matchings: DfineMatchings } {
  const m = dfineMatchings(preds, targets, ctx);
  const specs = dfineLossInputSpecs(ctx);
  const inputs: Record<string, HostTensor> = {};
  const tensor = (name: string): Float32Array => {
    const spec = specs[name]!;
    const t: HostTensor = { dtype: 'float32', dims: spec.dims, data: new Float32Array(spec.dims.reduce((a, b) => a * b, 1)) };
    inputs[name] = t;
    return t.data as Float32Array;
  };
  const { batch: B, nc, regMax } = ctx;
  const bins = regMax + 1;
  const terms = dfineLossTerms(ctx.layers, ctx.dn !== null);
  const real = (t: DfineLossTerm): number => (t.split === 'denoising' ? ctx.dn!.numDn : ctx.queries);
  const slots = (t: DfineLossTerm): number => (t.split === 'denoising' ? ctx.dn!.slots : ctx.queries);
  const boxMatch = (t: DfineLossTerm): Match[] => (t.split === 'denoising' ? m.dn! : m.go);
  const boxNorm = (t: DfineLossTerm): number => (t.split === 'denoising' ? m.numBoxesDn : m.numBoxesGo);

  // Boxes: one mask and target per split.
  for (const split of ['matching', 'denoising'] as const) {
    const t = terms.find((x) => x.split === split);
    if (!t) continue;
    const Q = slots(t);
    const mask = tensor(LOSS_INPUT.boxMask(split));
    const target = tensor(LOSS_INPUT.boxTarget(split));
    for (let k = 0; k < B * Q; k++) target.set([0.5, 0.5, 1, 1], k * 4);
    boxMatch(t).forEach((mt, img) => mt.queries.forEach((q, k) => {
      const row = img * Q + q;
      mask[row] = 1 / boxNorm(t);
      target.set(targets[img]!.boxes.subarray(mt.targets[k]! * 4, mt.targets[k]! * 4 + 4), row * 4);
    }));
  }

  // num_pos / num_neg of DDF: from the matching split's mask (GO pairs x 4 edges), reused by dn.
  const goPairs = m.go.reduce((a, x) => a + x.queries.length, 0);
  const scale = 8 / B;
  const numPos = Math.sqrt(goPairs * 4 * scale);
  const numNeg = Math.sqrt((B * ctx.queries - goPairs) * 4 * scale);

  for (const t of terms) {
    const Q = slots(t);
    const R = real(t);
    const { logits, boxes } = matchInput(preds, t.source, B, nc);
    // The class term with this term's own matching: from the IoU of the matched boxes.
    const target = tensor(LOSS_INPUT.clsTarget(t.suffix));
    const weight = tensor(LOSS_INPUT.clsWeight(t.suffix));
    const gtClass = new Int32Array(B * Q).fill(-1);
    const gtIou = new Float32Array(B * Q);
    m.byTerm[t.suffix]!.forEach((mt, img) => mt.queries.forEach((q, k) => {
      const g = mt.targets[k]!;
      gtClass[img * Q + q] = targets[img]!.labels[g]!;
      gtIou[img * Q + q] = boxIou(boxes, (img * Q + q) * 4, targets[img]!.boxes, g * 4);
    }));
    const norm = t.split === 'denoising' ? m.numBoxesDn : m.numBoxes;
    for (let img = 0; img < B; img++) {
      for (let q = 0; q < R; q++) {
        const row = img * Q + q;
        for (let c = 0; c < nc; c++) {
          const o = row * nc + c;
          if (gtClass[row] === c) {
            const tq = ctx.cls.target(gtIou[row]!);
            target[o] = tq;
            weight[o] = ctx.cls.positiveWeight(tq) / norm;
          } else {
            weight[o] = ctx.cls.negativeWeight(sigmoid(logits[o]!)) / norm;
          }
        }
      }
    }

    if (!t.fgl && !t.ddf) continue;
    // Local losses over the box matching (GO or denoising); IoU of this layer's boxes.
    const bm = boxMatch(t);
    const matchedIou = new Float32Array(B * Q).fill(-1);
    bm.forEach((mt, img) => mt.queries.forEach((q, k) => {
      matchedIou[img * Q + q] = boxIou(boxes, (img * Q + q) * 4, targets[img]!.boxes, mt.targets[k]! * 4);
    }));
    if (t.fgl) {
      const refs = preds[`${t.split === 'denoising' ? 'dn.' : ''}ref_points`];
      if (!refs) throw new Error('D-FINE loss: the predictions lack ref_points');
      const label = tensor(LOSS_INPUT.fglLabel(t.suffix));
      const norm = boxNorm(t);
      bm.forEach((mt, img) => mt.queries.forEach((q, k) => {
        const row = img * Q + q;
        const edges = fglTargets(refs.data as Float32Array, row * 4, targets[img]!.boxes, mt.targets[k]! * 4, ctx.project, ctx.regScale);
        const w = matchedIou[row]! / norm;
        edges.forEach((e, edge) => {
          const o = (row * 4 + edge) * bins;
          label[o + e.bin] += e.left * w;
          label[o + e.bin + 1] += e.right * w;
        });
      }));
    }
    if (t.ddf) {
      const teacher = matchInput(preds, `${t.split === 'denoising' ? 'dn.' : ''}layer${ctx.layers - 1}`, B, nc).logits;
      const coef = tensor(LOSS_INPUT.ddfCoef(t.suffix));
      let matched = 0;
      for (let img = 0; img < B; img++) for (let q = 0; q < R; q++) if (matchedIou[img * Q + q]! >= 0) matched++;
      const unmatched = B * R - matched;
      const posShare = matched > 0 ? numPos / (matched * 4 * (numPos + numNeg)) : 0;
      const negShare = unmatched > 0 ? numNeg / (unmatched * 4 * (numPos + numNeg)) : 0;
      const t2 = DFINE_DDF_T * DFINE_DDF_T;
      for (let img = 0; img < B; img++) {
        for (let q = 0; q < R; q++) {
          const row = img * Q + q;
          let w: number;
          let share: number;
          if (matchedIou[row]! >= 0) {
            w = matchedIou[row]!;
            share = posShare;
          } else {
            let best = -Infinity;
            for (let c = 0; c < nc; c++) best = Math.max(best, teacher[row * nc + c]!);
            w = sigmoid(best);
            share = negShare;
          }
          coef.fill(w * t2 * share, row * 4, row * 4 + 4);
        }
      }
    }
  }
  inputs[LOSS_INPUT.matchedPerImage] = { dtype: 'float32', dims: [], data: Float32Array.of(m.byTerm['']!.reduce((a, x) => a + x.queries.length, 0) / B) };
  return { inputs, matchings: m };
}
