/**
 * The YOLOX training loss as graph ops, given the host SimOTA assignment (simota.ts,
 * fed as inputs by assign.ts): over foreground anchors, 5 x (1 - IoU^2) of the decoded box with its
 * gt; BCE of the objectness logit against the foreground mask over every anchor; BCE of the class
 * logits against one-hot x the assignment's IoU (soft targets); and, with the `use_l1` switch, the L1
 * distance of the raw regression to the gt in grid units. Each is summed and divided by
 * max(foreground count, 1); nothing is divided by the batch size.
 */
import { i, ints, type GraphBuilder } from '../../graph/builder.ts';
import { concat, float32, int64, reshape, split } from '../../graph/nn.ts';
import type { LossValues, TrainShape } from '../registry.ts';
import { YOLOX_STRIDES } from './config.ts';
import type { LevelLogits } from './network.ts';
import { anchorGrid } from './simota.ts';

export const IOU_LOSS_WEIGHT = 5.0;

/** The assignment's inputs of the loss graph (names as fed by assign.ts). */
export interface AssignedInputs {
  /** `[B, A]` 1 at foreground anchors. */
  fg: string;
  /** `[B, A]` the matched gt's class id (-1 at background). */
  cls: string;
  /** `[B, A]` IoU of the predicted box with its matched gt (the soft class target). */
  iou: string;
  /** `[B, A, 4]` the matched gt box, cx cy w h in input pixels. */
  box: string;
  /** `[B, A, 4]` the L1 target of the raw regression. */
  l1: string;
  /** `[]` max(foreground anchors in the batch, 1). */
  norm: string;
  /** `[]` foreground anchors per gt (the logged num_fg). */
  fgPerGt: string;
}

/** Stable BCE with logits: max(x,0) - x*t + log(1 + exp(-|x|)). */
function bceWithLogits(b: GraphBuilder, x: string, t: string): string {
  return b.op('Add', [b.op('Sub', [b.op('Relu', [x]), b.op('Mul', [x, t])]), b.op('Softplus', [b.op('Neg', [b.op('Abs', [x])])])]);
}

/** A full sum, accumulated in float64 with the precise-statistics setting (as PyTorch's CPU sum). */
function total(b: GraphBuilder, x: string): string {
  return b.preciseStats
    ? b.op('Cast', [b.op('ReduceSum', [b.op('Cast', [x], { to: i(11) })], { keepdims: i(0) })], { to: i(1) })
    : b.op('ReduceSum', [x], { keepdims: i(0) });
}

/** `[B, A, 5+nc]` raw head outputs (reg, obj, cls), levels flattened row-major and joined by stride. */
export function flattenLevels(b: GraphBuilder, levels: readonly LevelLogits[], nc: number): string {
  return concat(b, levels.map((l) => b.op('Transpose', [reshape(b, concat(b, [l.reg, l.obj, l.cls], 1), [0, 5 + nc, -1])], { perm: ints([0, 2, 1]) })), 1);
}

/** Decoded boxes `[B, A, 4]` cx cy w h: (reg_xy + cell) * s and exp(reg_wh) * s (no 0.5 offset). */
export function decodeBoxes(b: GraphBuilder, reg: string, shape: TrainShape): string {
  const grid = anchorGrid(shape.height, shape.width, YOLOX_STRIDES);
  const cells: number[] = [];
  for (let a = 0; a < grid.count; a++) cells.push(grid.gx[a]!, grid.gy[a]!);
  const cell = b.constant('grid', float32(cells, [1, grid.count, 2]));
  const stride = b.constant('strides', float32(grid.stride, [1, grid.count, 1]));
  const [xy, wh] = split(b, reg, [2, 2], 2) as [string, string];
  return concat(b, [b.op('Mul', [b.op('Add', [xy, cell]), stride]), b.op('Mul', [b.op('Exp', [wh]), stride])], 2);
}

/** IoU of two `[B, A, 4]` cxcywh box sets, the original's IoULoss arithmetic (union + 1e-16). */
function boxIou(b: GraphBuilder, p: string, g: string): string {
  const half = b.scalar(0.5, 'half');
  const [pxy, pwh] = split(b, p, [2, 2], 2) as [string, string];
  const [gxy, gwh] = split(b, g, [2, 2], 2) as [string, string];
  const tl = b.op('Max', [b.op('Sub', [pxy, b.op('Mul', [pwh, half])]), b.op('Sub', [gxy, b.op('Mul', [gwh, half])])]);
  const br = b.op('Min', [b.op('Add', [pxy, b.op('Mul', [pwh, half])]), b.op('Add', [gxy, b.op('Mul', [gwh, half])])]);
  const prod = (v: string): string => {
    const [x, y] = split(b, v, [1, 1], 2) as [string, string];
    return b.op('Mul', [x, y]);
  };
  const en = prod(b.op('Cast', [b.op('Less', [tl, br])], { to: i(1) }));
  const inter = b.op('Mul', [prod(b.op('Sub', [br, tl])), en]);
  const union = b.op('Sub', [b.op('Add', [prod(pwh), prod(gwh)]), inter]);
  return b.op('Div', [inter, b.op('Add', [union, b.scalar(1e-16, 'eps16')])]); // [B, A, 1]
}

/** The loss from the head's raw level outputs and the assignment; `useL1` is a 0/1 scalar. */
export function emitYoloxLoss(b: GraphBuilder, levels: readonly LevelLogits[], a: AssignedInputs, useL1: string, shape: TrainShape, nc: number): LossValues {
  const flat = flattenLevels(b, levels, nc);
  const [reg, obj, cls] = split(b, flat, [4, 1, nc], 2) as [string, string, string];
  const boxes = b.scope('decode', () => decodeBoxes(b, reg, shape));
  const unsq = (v: string): string => b.op('Unsqueeze', [v, b.constant('axes', int64([2]))]);
  const fg = unsq(a.fg); // [B, A, 1]

  const iouLoss = b.scope('iou', () => {
    const iou = boxIou(b, boxes, a.box);
    const one = b.scalar(1, 'one');
    const perAnchor = b.op('Mul', [b.op('Sub', [one, b.op('Mul', [iou, iou])]), fg]);
    return b.op('Mul', [b.op('Div', [total(b, perAnchor), a.norm]), b.scalar(IOU_LOSS_WEIGHT, 'iou_weight')]);
  });
  const objLoss = b.scope('obj', () => b.op('Div', [total(b, bceWithLogits(b, obj, fg)), a.norm]));
  const clsLoss = b.scope('cls', () => {
    const classIds = b.constant('class_ids', float32(Array.from({ length: nc }, (_, k) => k), [1, 1, nc]));
    const onehot = b.op('Cast', [b.op('Equal', [unsq(a.cls), classIds])], { to: i(1) });
    const target = b.op('Mul', [onehot, unsq(a.iou)]);
    return b.op('Div', [total(b, b.op('Mul', [bceWithLogits(b, cls, target), fg])), a.norm]);
  });
  const l1Loss = b.scope('l1', () => {
    const dist = b.op('Mul', [b.op('Abs', [b.op('Sub', [reg, a.l1])]), fg]);
    return b.op('Mul', [b.op('Div', [total(b, dist), a.norm]), useL1]);
  });
  const iouOut = b.op('Identity', [iouLoss], {}, { name: 'loss_iou' });
  const objOut = b.op('Identity', [objLoss], {}, { name: 'loss_obj' });
  const clsOut = b.op('Identity', [clsLoss], {}, { name: 'loss_cls' });
  const l1Out = b.op('Identity', [l1Loss], {}, { name: 'loss_l1' });
  const sum = b.op('Add', [b.op('Add', [b.op('Add', [iouOut, objOut]), clsOut]), l1Out], {}, { name: 'loss_total' });
  return { total: sum, components: { iou: iouOut, obj: objOut, cls: clsOut, l1: l1Out }, numFg: b.op('Identity', [a.fgPerGt], {}, { name: 'num_fg' }) };
}
