/**
 * YOLOv9-seg's mask loss as graph ops (segmentation.md 2.6): for every positive anchor, the logits
 * coefficients x prototypes (no sigmoid) against its matched ground-truth mask at prototype
 * resolution, per-pixel BCE zeroed outside the matched box (proto pixel (i, j) kept when
 * x1 <= j < x2 and y1 <= i < y2), the mean over all prototype pixels divided by the box area
 * normalised to the input (at least 1e-6), the mean over the image's positives, summed over images
 * and weighted 2.5 / batch.
 *
 * With t in {0, 1}, BCE(x, t) = softplus(x) - x t, so the second term sums to coefficients .
 * (sum over the cropped mask of the prototypes): that part is computed per ground truth, and only
 * softplus(x) needs the per-anchor, per-pixel logits. Those are computed for the K = min(A, 10 M)
 * anchors with the most foreground (TopK of the 0/1 foreground), which holds every positive the
 * assigner can make (at most 10 per ground truth, ties at the 10th value aside).
 */
import { i, ints, type GraphBuilder } from '../../graph/builder.ts';
import { float32, int64, reshape, split } from '../../graph/nn.ts';

export const MASK_LOSS_WEIGHT = 2.5;
/** The prototypes are at a quarter of the input. */
export const MASK_RATIO = 4;
const TOPK = 10;

export interface MaskLossInputs {
  /** `[B, M, A]` 0/1: anchor a assigned to ground truth m (the assigner's final assignment). */
  assignment: string;
  /** `[B, 1, A]` 0/1 foreground. */
  fg: string;
  /** `[B, A, 4]` the matched ground-truth box of each anchor, input pixels. */
  targetBox: string;
  /** `[B, M, 4]` the ground-truth boxes, input pixels. */
  gtBox: string;
  /** `[B, M, Hm, Wm]` 0/1 ground-truth masks at prototype resolution. */
  gtMasks: string;
  /** `[B, nm, Hm, Wm]` prototypes. */
  proto: string;
  /** `[B, nm, A]` mask coefficients. */
  coeffs: string;
}

export interface MaskLossShape {
  batch: number;
  height: number;
  width: number;
  maxTargets: number;
  anchors: number;
  numMasks: number;
}

/** `[.., Hm, 1] x [.., 1, Wm]` 0/1 crop of boxes `[B, N, 4]` (input pixels) at prototype resolution. */
function crop(b: GraphBuilder, boxes: string, s: MaskLossShape, n: number): string {
  const hm = s.height / MASK_RATIO, wm = s.width / MASK_RATIO;
  const [x1, y1, x2, y2] = split(b, b.op('Div', [boxes, b.scalar(MASK_RATIO)]), [1, 1, 1, 1], 2).map((v) => reshape(b, v, [s.batch, n, 1, 1])) as [string, string, string, string];
  const rows = b.constant('mask_rows', float32(Array.from({ length: hm }, (_, k) => k), [1, 1, hm, 1]));
  const cols = b.constant('mask_cols', float32(Array.from({ length: wm }, (_, k) => k), [1, 1, 1, wm]));
  const within = (idx: string, lo: string, hi: string): string =>
    b.op('Cast', [b.op('And', [b.op('GreaterOrEqual', [idx, lo]), b.op('Less', [idx, hi])])], { to: i(1) });
  return b.op('Mul', [within(rows, y1, y2), within(cols, x1, x2)]); // [B, n, Hm, Wm]
}

export function emitYolo9MaskLoss(b: GraphBuilder, x: MaskLossInputs, s: MaskLossShape): string {
  const { batch: B, maxTargets: M, anchors: A, numMasks: nm } = s;
  const hm = s.height / MASK_RATIO, wm = s.width / MASK_RATIO, P = hm * wm;
  const K = Math.min(A, TOPK * M);
  const stop = (v: string): string => b.op('Identity', [v], {}, { name: 'StopGradient' });
  // The K anchors with foreground first; `valid` says which of them are positives.
  const [valid, idx] = b.opMulti('TopK', [reshape(b, stop(x.fg), [B, A]), b.constant('k', int64([K]))], 2, { axis: i(1), largest: i(1), sorted: i(1) }) as [string, string];
  const pick = (data: string, width: number): string =>
    b.op('GatherElements', [data, b.op('Expand', [reshape(b, idx, [B, K, 1]), b.constant('shape', int64([B, K, width]))])], { axis: i(1) });
  const coeffs = pick(b.op('Transpose', [x.coeffs], { perm: ints([0, 2, 1]) }), nm); // [B, K, nm]
  const box = pick(stop(x.targetBox), 4); // [B, K, 4]
  const owner = pick(b.op('Transpose', [stop(x.assignment)], { perm: ints([0, 2, 1]) }), M); // [B, K, M]
  const protoFlat = reshape(b, x.proto, [B, nm, P]);

  // softplus(logits) over each anchor's matched box: max(x, 0) + softplus(-|x|), stable for any x.
  const logits = reshape(b, b.op('MatMul', [coeffs, protoFlat]), [B, K, hm, wm]);
  const softplus = b.op('Add', [b.op('Relu', [logits]), b.op('Softplus', [b.op('Neg', [b.op('Abs', [logits])])])]);
  const term1 = b.op('ReduceSum', [b.op('Mul', [softplus, crop(b, box, s, K)]), b.constant('axes', int64([2, 3]))], { keepdims: i(0) }); // [B, K]

  // sum over the cropped mask of x = coefficients . (cropped mask x prototypes), per ground truth.
  const cropped = reshape(b, b.op('Mul', [x.gtMasks, crop(b, stop(x.gtBox), s, M)]), [B, M, P]);
  const q = b.op('MatMul', [cropped, b.op('Transpose', [protoFlat], { perm: ints([0, 2, 1]) })]); // [B, M, nm]
  const term2 = b.op('ReduceSum', [b.op('Mul', [coeffs, b.op('MatMul', [owner, q])]), b.constant('axes', int64([2]))], { keepdims: i(0) }); // [B, K]

  const [bx1, by1, bx2, by2] = split(b, box, [1, 1, 1, 1], 2) as [string, string, string, string];
  const area = b.op('Max', [reshape(b, b.op('Mul', [
    b.op('Div', [b.op('Sub', [bx2, bx1]), b.scalar(s.width)]), b.op('Div', [b.op('Sub', [by2, by1]), b.scalar(s.height)]),
  ]), [B, K]), b.scalar(1e-6)]);
  const perAnchor = b.op('Div', [b.op('Div', [b.op('Sub', [term1, term2]), b.scalar(P)]), area]);
  const axis1 = b.constant('axes', int64([1]));
  const count = b.op('ReduceSum', [valid, axis1], { keepdims: i(0) }); // [B]
  const perImage = b.op('Div', [b.op('ReduceSum', [b.op('Mul', [perAnchor, valid]), axis1], { keepdims: i(0) }), b.op('Max', [count, b.scalar(1)])]);
  return b.op('Mul', [b.op('ReduceSum', [perImage], { keepdims: i(0) }), b.scalar(MASK_LOSS_WEIGHT / B)], {}, { name: 'loss_seg' });
}
