/**
 * RF-DETR's criterion as graph ops over the train outputs (train-outputs.ts), the matchings and
 * every detached factor fed from the host (loss-targets.ts), per term (final layer, aux layers,
 * encoder):
 * - loss_ce, IA-BCE: sum(neg x - log sigmoid(x) (pos + neg)) / num_boxes, with pos = t and
 *   neg = 1 - t at matched entries and neg = sigmoid(x)^2 elsewhere, that p^2 not detached;
 * - loss_bbox = sum over matched queries of |box - target| / num_boxes, loss_giou = sum(1 - GIoU) /
 *   num_boxes;
 * - class_error and cardinality_error pass through as logged values.
 * Keys are the original's, unweighted (`loss_ce`, `loss_bbox_0`, `loss_giou_enc`, ...); the total
 * is sum(weight x loss) with weights 1 / 5 / 2.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { preciseSigmoid } from '../../graph/nn.ts';
import { giouRows, total } from '../detr/loss-ops.ts';
import type { LossValues } from '../registry.ts';
import { RFDETR_LOSS_INPUT as IN, RFDETR_LOSS_NAMES, RFDETR_LOSS_WEIGHTS, rfdetrLossTerms, type RfdetrLossTerm } from './loss-terms.ts';
import type { RfdetrHeadOutputs, RfdetrTrainOutputs } from './train-outputs.ts';

/** The named inputs the losses read (RFDETR_LOSS_INPUT names -> graph values). */
export type RfdetrLossFeeds = Readonly<Record<string, string>>;

function head(out: RfdetrTrainOutputs, t: RfdetrLossTerm): RfdetrHeadOutputs {
  return t.source === 'enc' ? out.enc : out.layers[Number(t.source.slice('layer'.length))]!;
}

/** IA-BCE summed over every entry (before the num_boxes division). */
function iaBce(b: GraphBuilder, x: string, pos: string, negMatched: string, free: string): string {
  const p = preciseSigmoid(b, x);
  const neg = b.op('Add', [b.op('Mul', [b.op('Mul', [p, p]), free]), negMatched]);
  // -log sigmoid(x) = max(-x, 0) + log(1 + exp(-|x|))
  const nls = b.op('Add', [b.op('Relu', [b.op('Neg', [x])]), b.op('Softplus', [b.op('Neg', [b.op('Abs', [x])])])]);
  return total(b, b.op('Add', [b.op('Mul', [neg, x]), b.op('Mul', [nls, b.op('Add', [pos, neg])])]));
}

/** Every loss key as a named scalar graph value, the weighted components and the total. */
export function emitRfdetrLoss(b: GraphBuilder, out: RfdetrTrainOutputs, feeds: RfdetrLossFeeds): LossValues & { keys: Record<string, string> } {
  const need = (name: string): string => {
    const v = feeds[name];
    if (!v) throw new Error(`RF-DETR loss: missing input ${name}`);
    return v;
  };
  const keys: Record<string, string> = {};
  const named = (key: string, v: string): string => (keys[key] = b.op('Identity', [v], {}, { name: key }));
  const weighted: Record<string, string[]> = { ce: [], bbox: [], giou: [] };
  const numBoxes = need(IN.numBoxes);
  for (const t of rfdetrLossTerms(out.layers.length)) {
    b.scope(`loss${t.suffix || '_main'}`, () => {
      const h = head(out, t);
      const per = (v: string): string => b.op('Div', [v, numBoxes]);
      const ce = named(`loss_ce${t.suffix}`, per(iaBce(b, h.logits, need(IN.cePos(t.suffix)), need(IN.ceNeg(t.suffix)), need(IN.ceFree(t.suffix)))));
      if (t.suffix === '') named('class_error', need(IN.classError));
      const mask = need(IN.boxMask(t.suffix));
      const gt = need(IN.boxTarget(t.suffix));
      const l1 = named(`loss_bbox${t.suffix}`, per(total(b, b.op('Mul', [b.op('Abs', [b.op('Sub', [h.boxes, gt])]), mask]))));
      const g = named(`loss_giou${t.suffix}`, per(total(b, b.op('Mul', [b.op('Sub', [b.scalar(1, 'one'), giouRows(b, h.boxes, gt)]), mask]))));
      named(`cardinality_error${t.suffix}`, need(IN.cardinality(t.suffix)));
      const W = RFDETR_LOSS_WEIGHTS;
      weighted.ce!.push(b.op('Mul', [ce, b.scalar(W.ce, 'w_ce')]));
      weighted.bbox!.push(b.op('Mul', [l1, b.scalar(W.bbox, 'w_bbox')]));
      weighted.giou!.push(b.op('Mul', [g, b.scalar(W.giou, 'w_giou')]));
    });
  }
  const sum = (vs: string[]): string => (vs.length === 1 ? b.op('Identity', [vs[0]!]) : b.op('Sum', vs));
  const components: Record<string, string> = {};
  for (const name of RFDETR_LOSS_NAMES) components[name] = b.op('Identity', [sum(weighted[name]!)], {}, { name: `loss_${name}_sum` });
  const totalValue = b.op('Identity', [sum(Object.values(components))], {}, { name: 'loss_total' });
  return { total: totalValue, components, keys, numFg: b.op('Identity', [need(IN.matchedPerImage)], {}, { name: 'num_fg' }) };
}
