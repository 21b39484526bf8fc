/**
 * D-FINE's criterion as graph ops over the train outputs (train-outputs.ts), with
 * the matchings and every detached factor fed from the host (loss-targets.ts) as dense per-query
 * tensors, so one graph serves any matching:
 * - VFL (D-FINE) or MAL (DEIM): sum(weight x BCE-with-logits(logit, soft target)), both fed;
 * - boxes: 5 x sum(mask x |box - gt|), 2 x sum(mask x (1 - GIoU(box, gt)));
 * - FGL: 0.15 x -sum(soft label x log_softmax(corners)) (the two-bin CE weighted by IoU);
 * - DDF: 1.5 x sum(coef x KL(softmax(teacher / T) || softmax(student / T))), teacher detached.
 * Each key is the original's (`loss_vfl_aux_0`, ...); the total is their plain sum.
 */
import { i, type GraphBuilder } from '../../graph/builder.ts';
import { reshape } from '../../graph/nn.ts';
import { bceWithLogits, giouRows, total } from '../detr/loss-ops.ts';
import type { LossValues } from '../registry.ts';
import { DFINE_DDF_T, DFINE_LOSS_WEIGHTS, LOSS_INPUT, dfineLossTerms, lossNamesOf, termKeys, type ClassLoss, type DfineLossTerm } from './loss-terms.ts';
import type { DfineHeadOutputs, DfineLayerOutputs, DfineTrainOutputs } from './train-outputs.ts';

/** log_softmax over the bins of `[B, Q, 4(R+1)]` corner logits, as `[B, Q, 4, R+1]`. */
function logBins(b: GraphBuilder, corners: string, bins: number, scale = 1): string {
  const x = reshape(b, corners, [0, 0, 4, bins]);
  return b.op('LogSoftmax', [scale === 1 ? x : b.op('Div', [x, b.scalar(scale, 'temperature')])], { axis: i(-1) });
}

/** The named inputs a term's losses read (LOSS_INPUT names -> graph values). */
export type LossFeeds = Readonly<Record<string, string>>;

function head(out: DfineTrainOutputs, t: DfineLossTerm): DfineHeadOutputs | DfineLayerOutputs {
  const split = t.split === 'denoising' ? out.denoising! : out.matching;
  if (t.layer !== null) return split.layers[t.layer]!;
  return t.source === 'enc' ? out.enc : split.pre;
}

/** Every loss key as a named scalar graph value, the components and the total; `cls` names the class term's keys. */
export function emitDfineLoss(b: GraphBuilder, out: DfineTrainOutputs, feeds: LossFeeds, cls: ClassLoss): LossValues & { keys: Record<string, string> } {
  const need = (name: string): string => {
    const v = feeds[name];
    if (!v) throw new Error(`D-FINE loss: missing input ${name}`);
    return v;
  };
  const bins = out.regMax + 1;
  const W = DFINE_LOSS_WEIGHTS;
  const keys: Record<string, string> = {};
  const named = (key: string, v: string): void => { keys[key] = b.op('Identity', [v], {}, { name: key }); };
  for (const t of dfineLossTerms(out.matching.layers.length, out.denoising !== null)) {
    b.scope(`loss${t.suffix || '_main'}`, () => {
      const h = head(out, t);
      const clsSum = total(b, b.op('Mul', [need(LOSS_INPUT.clsWeight(t.suffix)), bceWithLogits(b, h.logits, need(LOSS_INPUT.clsTarget(t.suffix)))]));
      named(`loss_${cls.key}${t.suffix}`, b.op('Mul', [clsSum, b.scalar(W.cls, `w_${cls.key}`)]));
      const mask = need(LOSS_INPUT.boxMask(t.split));
      const gt = need(LOSS_INPUT.boxTarget(t.split));
      const l1 = total(b, b.op('Mul', [b.op('Abs', [b.op('Sub', [h.boxes, gt])]), mask]));
      named(`loss_bbox${t.suffix}`, b.op('Mul', [l1, b.scalar(W.bbox, 'w_bbox')]));
      const g = total(b, b.op('Mul', [b.op('Sub', [b.scalar(1, 'one'), giouRows(b, h.boxes, gt)]), mask]));
      named(`loss_giou${t.suffix}`, b.op('Mul', [g, b.scalar(W.giou, 'w_giou')]));
      if (!('corners' in h)) return;
      if (t.fgl) {
        const ce = total(b, b.op('Mul', [need(LOSS_INPUT.fglLabel(t.suffix)), logBins(b, h.corners, bins)]));
        named(`loss_fgl${t.suffix}`, b.op('Mul', [ce, b.scalar(-W.fgl, 'w_fgl')]));
      }
      if (termKeys(t, cls).includes(`loss_ddf${t.suffix}`)) {
        if (!t.ddf) {
          // The split's teacher distils into itself: the original's exact zero.
          named(`loss_ddf${t.suffix}`, b.op('Mul', [total(b, h.corners), b.scalar(0, 'zero')]));
          return;
        }
        const split = t.split === 'denoising' ? out.denoising! : out.matching;
        const teacher = b.op('Identity', [split.layers[split.layers.length - 1]!.corners], {}, { name: 'teacher/StopGradient' });
        const logP = logBins(b, teacher, bins, DFINE_DDF_T);
        const logQ = logBins(b, h.corners, bins, DFINE_DDF_T);
        const kl = b.op('ReduceSum', [b.op('Mul', [b.op('Exp', [logP]), b.op('Sub', [logP, logQ])]), b.constant('axes', { dtype: 'int64', dims: [1], data: BigInt64Array.of(-1n) })], { keepdims: i(0) });
        const ddf = total(b, b.op('Mul', [kl, need(LOSS_INPUT.ddfCoef(t.suffix))]));
        named(`loss_ddf${t.suffix}`, b.op('Mul', [ddf, b.scalar(W.ddf, 'w_ddf')]));
      }
    });
  }
  const sum = (vs: string[]): string => (vs.length === 1 ? b.op('Identity', [vs[0]!]) : b.op('Sum', vs));
  const components: Record<string, string> = {};
  for (const name of lossNamesOf(cls)) {
    const vs = Object.entries(keys).filter(([k]) => k === `loss_${name}` || k.startsWith(`loss_${name}_`)).map(([, v]) => v);
    components[name] = b.op('Identity', [sum(vs)], {}, { name: `loss_${name}_sum` });
  }
  const totalValue = b.op('Identity', [sum(Object.values(keys))], {}, { name: 'loss_total' });
  return { total: totalValue, components, keys, numFg: b.op('Identity', [need(LOSS_INPUT.matchedPerImage)], {}, { name: 'num_fg' }) };
}
