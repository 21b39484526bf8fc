/**
 * The YOLOv9 training loss as graph ops: task-aligned assignment on detached
 * predictions (top 10, IoU^6 x class^0.5, CIoU), CIoU box loss, DFL loss (reg_max 16), BCE class
 * loss, weights 7.5 / 1.5 / 0.5, normalised by the sum of soft class targets. Being graph ops, the
 * assigner runs on whatever execution provider runs the step.
 */
import { i, ints, type GraphBuilder } from '../../graph/builder.ts';
import { concat, float32, int64, preciseSigmoid, reshape, split } from '../../graph/nn.ts';
import { REG_MAX, YOLO9_STRIDES } from './config.ts';

const EPS = 1e-7;
const TOPK = 10;
const ALPHA_CLS = 0.5;
const BETA_IOU = 6.0;
export const LOSS_WEIGHTS = { box: 7.5, dfl: 1.5, cls: 0.5 } as const;

export interface LossConfig {
  batch: number;
  height: number;
  width: number;
  nc: number;
  /** Target rows per image (padding included). */
  maxTargets: number;
}

export interface LossOutputs {
  total: string;
  box: string;
  dfl: string;
  cls: string;
  numFg: string;
  /** What the mask loss reads of the assignment: `assignment` [B,M,A], `fg` [B,1,A], `targetBox` [B,A,4] and `gtBox` [B,M,4] in pixels. */
  assigned: { assignment: string; fg: string; targetBox: string; gtBox: string; anchors: number };
}

interface Boxes {
  x1: string;
  y1: string;
  x2: string;
  y2: string;
}

const stop = (b: GraphBuilder, v: string): string => b.op('Identity', [v], {}, { name: 'StopGradient' });

/** CIoU of two broadcastable box sets; alpha is a constant (no gradient), as the original. */
export function ciou(b: GraphBuilder, p: Boxes, q: Boxes, kind: 'ciou' | 'iou' | 'diou' = 'ciou'): string {
  const zero = b.scalar(0, 'zero');
  const eps = b.scalar(EPS, 'eps');
  const iw = b.op('Max', [b.op('Sub', [b.op('Min', [p.x2, q.x2]), b.op('Max', [p.x1, q.x1])]), zero]);
  const ih = b.op('Max', [b.op('Sub', [b.op('Min', [p.y2, q.y2]), b.op('Max', [p.y1, q.y1])]), zero]);
  const inter = b.op('Mul', [iw, ih]);
  const w1 = b.op('Sub', [p.x2, p.x1]);
  const h1 = b.op('Sub', [p.y2, p.y1]);
  const w2 = b.op('Sub', [q.x2, q.x1]);
  const h2 = b.op('Sub', [q.y2, q.y1]);
  const union = b.op('Sub', [b.op('Add', [b.op('Mul', [w1, h1]), b.op('Mul', [w2, h2])]), inter]);
  const iou = b.op('Div', [inter, b.op('Add', [union, eps])]);
  if (kind === 'iou') return iou;
  const half = b.scalar(0.5, 'half');
  const dx = b.op('Mul', [b.op('Sub', [b.op('Add', [p.x1, p.x2]), b.op('Add', [q.x1, q.x2])]), half]);
  const dy = b.op('Mul', [b.op('Sub', [b.op('Add', [p.y1, p.y2]), b.op('Add', [q.y1, q.y2])]), half]);
  const centre = b.op('Add', [b.op('Mul', [dx, dx]), b.op('Mul', [dy, dy])]);
  const cw = b.op('Sub', [b.op('Max', [p.x2, q.x2]), b.op('Min', [p.x1, q.x1])]);
  const ch = b.op('Sub', [b.op('Max', [p.y2, q.y2]), b.op('Min', [p.y1, q.y1])]);
  const diag = b.op('Add', [b.op('Add', [b.op('Mul', [cw, cw]), b.op('Mul', [ch, ch])]), eps]);
  const diou = b.op('Sub', [iou, b.op('Div', [centre, diag])]);
  if (kind === 'diou') return diou;
  const arctan = b.op('Sub', [b.op('Atan', [b.op('Div', [w1, b.op('Add', [h1, eps])])]), b.op('Atan', [b.op('Div', [w2, b.op('Add', [h2, eps])])])]);
  const v = b.op('Mul', [b.op('Mul', [arctan, arctan]), b.scalar(4 / Math.PI ** 2, 'four_over_pi2')]);
  const alpha = stop(b, b.op('Div', [v, b.op('Add', [b.op('Sub', [v, iou]), b.scalar(1 + EPS, 'one_eps')])]));
  return b.op('Sub', [diou, b.op('Mul', [alpha, v])]);
}

/** Anchor centres (pixels) and strides as `[1,1,A]` constants for a static input size. */
function anchorConstants(b: GraphBuilder, height: number, width: number): { ax: string; ay: string; stride: string; count: number } {
  const xs: number[] = [];
  const ys: number[] = [];
  const st: number[] = [];
  for (const s of YOLO9_STRIDES) {
    for (let y = 0; y < height / s; y++) for (let x = 0; x < width / s; x++) {
      xs.push(x * s + Math.floor(s / 2));
      ys.push(y * s + Math.floor(s / 2));
      st.push(s);
    }
  }
  const a = st.length;
  return {
    ax: b.constant('anchor_x', float32(xs, [1, 1, a])),
    ay: b.constant('anchor_y', float32(ys, [1, 1, a])),
    stride: b.constant('anchor_stride', float32(st, [1, 1, a])),
    count: a,
  };
}

export function emitYolo9Loss(b: GraphBuilder, levels: string[], targets: string, cfg: LossConfig): LossOutputs {
  const { batch: B, nc, maxTargets: M } = cfg;
  const anchors = anchorConstants(b, cfg.height, cfg.width);
  const A = anchors.count;
  if (A < TOPK) throw new Error(`input ${cfg.height}x${cfg.width} has ${A} anchors; the assigner needs at least ${TOPK}`);
  const { ax, ay, stride } = anchors;

  // Predictions: DFL expectation -> pixel boxes; class logits.
  const flat = concat(b, levels.map((lv) => reshape(b, lv, [B, 4 * REG_MAX + nc, -1])), 2);
  const [boxLogits, clsLogits] = split(b, flat, [4 * REG_MAX, nc], 1) as [string, string];
  const dflLogits = reshape(b, boxLogits, [B, 4, REG_MAX, A]);
  const bins = b.constant('bins', float32(Array.from({ length: REG_MAX }, (_, k) => k), [1, 1, REG_MAX, 1]));
  const dist = b.scope('dfl', () => b.op('ReduceSum', [b.op('Mul', [b.op('Softmax', [dflLogits], { axis: i(2) }), bins]), b.constant('axes', int64([2]))], { keepdims: i(0) }));
  const [dl, dt, dr, db] = split(b, dist, [1, 1, 1, 1], 1) as [string, string, string, string];
  const pred: Boxes = {
    x1: b.op('Sub', [ax, b.op('Mul', [dl, stride])]),
    y1: b.op('Sub', [ay, b.op('Mul', [dt, stride])]),
    x2: b.op('Add', [ax, b.op('Mul', [dr, stride])]),
    y2: b.op('Add', [ay, b.op('Mul', [db, stride])]),
  }; // each [B,1,A], pixels

  // Targets: [B,M,5] -> class one-hot [B,M,nc] and pixel boxes [B,M,1] each.
  const [tcls, tbox] = split(b, targets, [1, 4], 2) as [string, string];
  const tpx = b.op('Mul', [tbox, b.constant('scale', float32([cfg.width, cfg.height, cfg.width, cfg.height], [1, 1, 4]))]);
  const [tx1, ty1, tx2, ty2] = split(b, tpx, [1, 1, 1, 1], 2) as [string, string, string, string];
  const gt: Boxes = { x1: tx1, y1: ty1, x2: tx2, y2: ty2 };
  const classIds = b.constant('class_ids', float32(Array.from({ length: nc }, (_, k) => k), [1, 1, nc]));
  const onehot = b.op('Cast', [b.op('Equal', [b.op('Max', [tcls, b.scalar(0)]), classIds])], { to: i(1) }); // padding -1 -> class 0, never matched

  const assigned = b.scope('assigner', () => {
    const p: Boxes = { x1: stop(b, pred.x1), y1: stop(b, pred.y1), x2: stop(b, pred.x2), y2: stop(b, pred.y2) };
    const clsProb = preciseSigmoid(b, stop(b, clsLogits)); // [B,nc,A]
    // Anchor inside the gt box, and within reach of the distribution (reg_max - 1.01 strides).
    const l = b.op('Sub', [ax, tx1]);
    const t = b.op('Sub', [ay, ty1]);
    const r = b.op('Sub', [tx2, ax]);
    const d = b.op('Sub', [ty2, ay]);
    const minD = b.op('Min', [b.op('Min', [l, t]), b.op('Min', [r, d])]);
    const maxD = b.op('Max', [b.op('Max', [l, t]), b.op('Max', [r, d])]);
    const inside = b.op('And', [
      b.op('GreaterOrEqual', [minD, b.scalar(0)]),
      b.op('LessOrEqual', [b.op('Div', [maxD, stride]), b.scalar(REG_MAX - 1.01)]),
    ]); // [B,M,A]
    const iou = b.op('Clip', [ciou(b, gt, p), b.scalar(0), b.scalar(1)]); // [B,M,A]
    const prob = b.op('MatMul', [onehot, clsProb]); // [B,M,A]: the gt class's probability at each anchor
    const align = b.op('Mul', [b.op('Pow', [iou, b.scalar(BETA_IOU)]), b.op('Pow', [prob, b.scalar(ALPHA_CLS)])]);
    const candidate = b.op('Mul', [align, b.op('Cast', [inside], { to: i(1) })]);
    // Top 10 per gt (the 10th value as a threshold), positives only.
    const [topVals] = b.opMulti('TopK', [candidate, b.constant('k', int64([TOPK]))], 2, { axis: i(2), largest: i(1), sorted: i(1) }) as [string, string];
    const kth = b.op('Slice', [topVals, b.constant('s', int64([TOPK - 1])), b.constant('e', int64([TOPK])), b.constant('ax', int64([2]))]);
    let mask = b.op('And', [b.op('GreaterOrEqual', [candidate, kth]), b.op('Greater', [candidate, b.scalar(0)])]);
    // A gt with no kept anchor but a positive alignment somewhere gets its best-aligned anchor.
    const anchorIdx = b.constant('anchor_idx', int64(Array.from({ length: A }, (_, k) => k), [1, 1, A]));
    const kept = b.op('ReduceMax', [b.op('Cast', [mask], { to: i(1) })], { axes: ints([2]), keepdims: i(1) });
    const bestAnchor = b.op('ArgMax', [align], { axis: i(2), keepdims: i(1) });
    const fallback = b.op('And', [
      b.op('And', [b.op('Equal', [anchorIdx, bestAnchor]), b.op('Equal', [kept, b.scalar(0)])]),
      b.op('Greater', [b.op('ReduceMax', [align], { axes: ints([2]), keepdims: i(1) }), b.scalar(0)]),
    ]);
    mask = b.op('Or', [mask, fallback]);
    // An anchor claimed by several gts goes to the one with the highest IoU.
    const maskF0 = b.op('Cast', [mask], { to: i(1) });
    const claims = b.op('ReduceSum', [maskF0, b.constant('ax', int64([1]))], { keepdims: i(1) }); // [B,1,A]
    const bestGt = b.op('ArgMax', [b.op('Mul', [iou, maskF0])], { axis: i(1), keepdims: i(1) }); // [B,1,A]
    const gtIdx = b.constant('gt_idx', int64(Array.from({ length: M }, (_, k) => k), [1, M, 1]));
    const contested = b.op('Greater', [claims, b.scalar(1)]);
    const final = b.op('Or', [b.op('And', [contested, b.op('Equal', [gtIdx, bestGt])]), b.op('And', [b.op('Not', [contested]), mask])]);
    const maskF = b.op('Cast', [final], { to: i(1) }); // [B,M,A]
    const fg = b.op('ReduceMax', [maskF], { axes: ints([1]), keepdims: i(1) }); // [B,1,A]
    // Soft class targets: alignment normalised per gt, scaled by that gt's best IoU.
    const alignM = b.op('Mul', [align, maskF]);
    const maxAlign = b.op('ReduceMax', [alignM], { axes: ints([2]), keepdims: i(1) });
    const maxIou = b.op('ReduceMax', [b.op('Mul', [iou, maskF])], { axes: ints([2]), keepdims: i(1) });
    const norm = b.op('Mul', [b.op('Div', [alignM, b.op('Add', [maxAlign, b.scalar(1e-9)])]), maxIou]); // [B,M,A]
    const targetCls = b.op('MatMul', [b.op('Transpose', [norm], { perm: ints([0, 2, 1]) }), onehot]); // [B,A,nc]
    const targetBox = b.op('MatMul', [b.op('Transpose', [maskF], { perm: ints([0, 2, 1]) }), tpx]); // [B,A,4]
    return { targetCls, targetBox, fg, maskF };
  });

  const { targetCls, targetBox, fg, maskF } = assigned;
  const zero = b.scalar(0);
  const one = b.scalar(1);
  const clsNorm = b.op('Max', [b.op('ReduceSum', [targetCls], { keepdims: i(0) }), one]);
  const boxWeight = b.op('Mul', [reshape(b, b.op('ReduceSum', [targetCls, b.constant('ax', int64([2]))], { keepdims: i(1) }), [B, 1, A]), fg]); // [B,1,A]

  const lossCls = b.scope('cls', () => {
    const t = b.op('Transpose', [targetCls], { perm: ints([0, 2, 1]) }); // [B,nc,A]
    // Stable BCE with logits: max(x,0) - x*t + log(1 + exp(-|x|)).
    const bce = b.op('Add', [b.op('Sub', [b.op('Relu', [clsLogits]), b.op('Mul', [clsLogits, t])]), b.op('Softplus', [b.op('Neg', [b.op('Abs', [clsLogits])])])]);
    // B*nc*A terms: summed in float64 with the precise-statistics setting (a float32 sum of ~10^5
    // terms is off by ~3e-5 relative), in float32 for providers without float64 kernels.
    const sum = b.preciseStats
      ? b.op('Cast', [b.op('ReduceSum', [b.op('Cast', [bce], { to: i(11) })], { keepdims: i(0) })], { to: i(1) })
      : b.op('ReduceSum', [bce], { keepdims: i(0) });
    return b.op('Div', [sum, clsNorm]);
  });

  const [bx1, by1, bx2, by2] = split(b, b.op('Transpose', [targetBox], { perm: ints([0, 2, 1]) }), [1, 1, 1, 1], 1) as [string, string, string, string]; // each [B,1,A]
  const lossBox = b.scope('box', () => {
    const scaled = (v: string): string => b.op('Div', [v, stride]);
    const c = ciou(b, { x1: scaled(pred.x1), y1: scaled(pred.y1), x2: scaled(pred.x2), y2: scaled(pred.y2) }, { x1: scaled(bx1), y1: scaled(by1), x2: scaled(bx2), y2: scaled(by2) });
    return b.op('Div', [b.op('ReduceSum', [b.op('Mul', [b.op('Sub', [one, c]), boxWeight])], { keepdims: i(0) }), clsNorm]);
  });

  const lossDfl = b.scope('dfl_loss', () => {
    const axg = b.op('Div', [ax, stride]);
    const ayg = b.op('Div', [ay, stride]);
    const sides = [b.op('Sub', [axg, b.op('Div', [bx1, stride])]), b.op('Sub', [ayg, b.op('Div', [by1, stride])]), b.op('Sub', [b.op('Div', [bx2, stride]), axg]), b.op('Sub', [b.op('Div', [by2, stride]), ayg])];
    const d = b.op('Clip', [concat(b, sides, 1), zero, b.scalar(REG_MAX - 1.01)]); // [B,4,A], constant
    const lo = b.op('Floor', [d]);
    const wl = b.op('Sub', [b.op('Add', [lo, one]), d]);
    const wr = b.op('Sub', [d, lo]);
    const lo4 = reshape(b, lo, [B, 4, 1, A]);
    const hit = (v: string): string => b.op('Cast', [b.op('Equal', [bins, v])], { to: i(1) });
    const weights = b.op('Add', [b.op('Mul', [hit(lo4), reshape(b, wl, [B, 4, 1, A])]), b.op('Mul', [hit(b.op('Add', [lo4, one])), reshape(b, wr, [B, 4, 1, A])])]);
    const logp = b.op('LogSoftmax', [dflLogits], { axis: i(2) });
    const ce = b.op('Neg', [b.op('ReduceSum', [b.op('Mul', [weights, logp]), b.constant('ax', int64([2]))], { keepdims: i(0) })]); // [B,4,A]
    const perAnchor = b.op('ReduceMean', [ce], { axes: ints([1]), keepdims: i(1) }); // [B,1,A]
    return b.op('Div', [b.op('ReduceSum', [b.op('Mul', [perAnchor, boxWeight])], { keepdims: i(0) }), clsNorm]);
  });

  const box = b.op('Mul', [lossBox, b.scalar(LOSS_WEIGHTS.box)], {}, { name: 'loss_box' });
  const dfl = b.op('Mul', [lossDfl, b.scalar(LOSS_WEIGHTS.dfl)], {}, { name: 'loss_dfl' });
  const cls = b.op('Mul', [lossCls, b.scalar(LOSS_WEIGHTS.cls)], {}, { name: 'loss_cls' });
  const total = b.op('Add', [b.op('Add', [box, dfl]), cls], {}, { name: 'loss_total' });
  const numFg = b.op('Div', [b.op('ReduceSum', [fg], { keepdims: i(0) }), b.scalar(B)], {}, { name: 'num_fg' });
  return { total, box, dfl, cls, numFg, assigned: { assignment: maskF, fg, targetBox, gtBox: tpx, anchors: A } };
}
