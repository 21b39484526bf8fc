/** Graph pieces of the DETR criteria: full sums, BCE with logits, row-wise GIoU. */
import { i, type GraphBuilder } from '../../graph/builder.ts';
import { slice } from '../../graph/nn.ts';

/** A full sum, accumulated in float64 under the precise-statistics setting. */
export function total(b: GraphBuilder, x: string): string {
  return b.preciseStats
    ? b.op('Cast', [b.op('ReduceSum', [b.op('Cast', [x], { to: i(11) })], { keepdims: i(0) })], { to: i(1) })
    : b.op('ReduceSum', [x], { keepdims: i(0) });
}

/** max(x, 0) - x t + log(1 + exp(-|x|)). */
export function bceWithLogits(b: GraphBuilder, x: string, t: string): string {
  return b.op('Add', [b.op('Sub', [b.op('Relu', [x]), b.op('Mul', [x, t])]), b.op('Softplus', [b.op('Neg', [b.op('Abs', [x])])])]);
}

/** Row-wise GIoU of two `[B, Q, 4]` cxcywh sets (`generalized_box_iou`'s diagonal, sizes clamped at 0). `[B, Q, 1]`. */
export function giouRows(b: GraphBuilder, p: string, g: string): string {
  const half = b.scalar(0.5, 'half');
  const zero = b.scalar(0, 'zero');
  const corners = (x: string): [string, string] => {
    const xy = slice(b, x, -1, 0, 2);
    const hwh = b.op('Mul', [b.op('Max', [slice(b, x, -1, 2, 4), zero]), half]);
    return [b.op('Sub', [xy, hwh]), b.op('Add', [xy, hwh])];
  };
  const area = (lo: string, hi: string): string => {
    const wh = b.op('Sub', [hi, lo]);
    return b.op('Mul', [slice(b, wh, -1, 0, 1), slice(b, wh, -1, 1, 2)]);
  };
  const [p1, p2] = corners(p);
  const [g1, g2] = corners(g);
  const inner = b.op('Max', [b.op('Sub', [b.op('Min', [p2, g2]), b.op('Max', [p1, g1])]), zero]);
  const inter = b.op('Mul', [slice(b, inner, -1, 0, 1), slice(b, inner, -1, 1, 2)]);
  const union = b.op('Sub', [b.op('Add', [area(p1, p2), area(g1, g2)]), inter]);
  const iou = b.op('Div', [inter, union]);
  const outer = b.op('Max', [b.op('Sub', [b.op('Max', [p2, g2]), b.op('Min', [p1, g1])]), zero]);
  const hull = b.op('Mul', [slice(b, outer, -1, 0, 1), slice(b, outer, -1, 1, 2)]);
  return b.op('Sub', [iou, b.op('Div', [b.op('Sub', [hull, union]), hull])]);
}
