/**
 * Vector-Jacobian rules, one per op kind, in one registry. A rule receives the forward node, the
 * gradients of its outputs and the static shapes, emits gradient nodes, and returns one gradient
 * (or null) per forward input. Formulations favour what ONNX Runtime runs fast: 1x1 convolutions
 * become MatMuls, input gradients of spatial convolutions are ConvTranspose, weight gradients are a
 * convolution of the transposed input with the transposed output gradient.
 */
import { i, ints, s, type GraphBuilder } from '../builder.ts';
import { attrFloat, attrInt, attrInts, type Node } from '../ir.ts';
import { int64, preciseSigmoid } from '../nn.ts';
import { dims, gOnly, type RuleContext, type VjpRule } from './context.ts';
import { after, reduceSum, reshapeTo, transpose, unbroadcast, zerosOf } from './emit.ts';
import { gridSampleRule } from './rules-grid-sample.ts';
import { INDEXING_RULES } from './rules-indexing.ts';
import { batchNormInferenceRule, layerNormRule } from './rules-norm.ts';

export type { RuleContext, VjpRule } from './context.ts';

/** Ops whose outputs carry no gradient (comparisons, indices, shapes). */
export const NON_DIFFERENTIABLE = new Set([
  'Shape', 'Size', 'Equal', 'Greater', 'GreaterOrEqual', 'Less', 'LessOrEqual', 'And', 'Or', 'Not', 'Xor',
  'ArgMax', 'ArgMin', 'OneHot', 'Floor', 'Ceil', 'Round', 'Sign', 'ConstantOfShape', 'Range', 'NonZero', 'IsNaN', 'IsInf',
]);

const rules = new Map<string, VjpRule>();

export function registerRule(op: string, rule: VjpRule): void {
  rules.set(op, rule);
}

export function ruleFor(op: string): VjpRule | undefined {
  return rules.get(op);
}

export function registeredOps(): string[] {
  return [...rules.keys()].sort();
}

// ---- elementwise arithmetic (numpy broadcasting) ----

registerRule('Add', (ctx) => {
  const g = gOnly(ctx);
  const gd = dims(ctx, ctx.node.outputs[0]!);
  return ctx.node.inputs.map((x) => unbroadcast(ctx.b, g, gd, dims(ctx, x)));
});

registerRule('Sum', (ctx) => ctx.node.inputs.map((x) => unbroadcast(ctx.b, gOnly(ctx), dims(ctx, ctx.node.outputs[0]!), dims(ctx, x))));

registerRule('Sub', (ctx) => {
  const { b } = ctx;
  const g = gOnly(ctx);
  const gd = dims(ctx, ctx.node.outputs[0]!);
  const [x, y] = ctx.node.inputs as [string, string];
  return [unbroadcast(b, g, gd, dims(ctx, x)), unbroadcast(b, b.op('Neg', [g]), gd, dims(ctx, y))];
});

registerRule('Mul', (ctx) => {
  const { b } = ctx;
  const g = gOnly(ctx);
  const gd = dims(ctx, ctx.node.outputs[0]!);
  const [x, y] = ctx.node.inputs as [string, string];
  return [unbroadcast(b, b.op('Mul', [g, y]), gd, dims(ctx, x)), unbroadcast(b, b.op('Mul', [g, x]), gd, dims(ctx, y))];
});

registerRule('Div', (ctx) => {
  const { b } = ctx;
  const g = gOnly(ctx);
  const gd = dims(ctx, ctx.node.outputs[0]!);
  const [x, y] = ctx.node.inputs as [string, string];
  const gx = b.op('Div', [g, y]);
  const gyv = b.op('Neg', [b.op('Mul', [gx, ctx.node.outputs[0]!])]);
  return [unbroadcast(b, gx, gd, dims(ctx, x)), unbroadcast(b, gyv, gd, dims(ctx, y))];
});

registerRule('Neg', (ctx) => [ctx.b.op('Neg', [gOnly(ctx)])]);
/** Identity nodes named `.../StopGradient` (or a uniquified `StopGradient_<n>`) block gradients. */
export function isStopGradient(node: Node): boolean {
  return node.op === 'Identity' && /\/StopGradient(_\d+)?$/.test(node.name);
}

registerRule('Identity', (ctx) => (isStopGradient(ctx.node) ? [null] : [gOnly(ctx)]));

/** Where a mask holds, the gradient passes; elsewhere zero. */
function masked(b: GraphBuilder, g: string, mask: string): string {
  return b.op('Where', [mask, g, b.scalar(0, 'zero')]);
}

/** Elementwise max/min: the gradient goes to the operand that was selected (the first one on ties). */
function selectRule(firstWins: 'GreaterOrEqual' | 'LessOrEqual'): VjpRule {
  return (ctx) => {
    const { b } = ctx;
    const g = gOnly(ctx);
    const gd = dims(ctx, ctx.node.outputs[0]!);
    const [x, y] = ctx.node.inputs as [string, string];
    const xWins = b.op(firstWins, [x, y]);
    return [unbroadcast(b, masked(b, g, xWins), gd, dims(ctx, x)), unbroadcast(b, masked(b, g, b.op('Not', [xWins])), gd, dims(ctx, y))];
  };
}

registerRule('Max', selectRule('GreaterOrEqual'));
registerRule('Min', selectRule('LessOrEqual'));

registerRule('Clip', (ctx) => {
  const { b, node } = ctx;
  const x = node.inputs[0]!;
  let mask: string | null = null;
  if (node.inputs[1]) mask = b.op('GreaterOrEqual', [x, node.inputs[1]]);
  if (node.inputs[2]) {
    const upper = b.op('LessOrEqual', [x, node.inputs[2]]);
    mask = mask ? b.op('And', [mask, upper]) : upper;
  }
  return [mask ? masked(b, gOnly(ctx), mask) : gOnly(ctx), null, null];
});

// The mask from the output (y > 0 exactly where x > 0): the layer after a ReLU keeps y for its own
// gradient, so the pre-activation need not be kept too (RF-DETR's decoder FFN: 61 MB a layer at b2).
registerRule('Relu', (ctx) => [masked(ctx.b, gOnly(ctx), ctx.b.op('Greater', [ctx.node.outputs[0]!, ctx.b.scalar(0, 'zero')]))]);
registerRule('Abs', (ctx) => [ctx.b.op('Mul', [gOnly(ctx), ctx.b.op('Sign', [ctx.node.inputs[0]!])])]);

// ---- unary math ----

registerRule('Sigmoid', (ctx) => {
  const { b } = ctx;
  const y = ctx.node.outputs[0]!;
  return [b.op('Mul', [gOnly(ctx), b.op('Mul', [y, b.op('Sub', [b.scalar(1, 'one'), y])])])];
});
registerRule('Exp', (ctx) => [ctx.b.op('Mul', [gOnly(ctx), ctx.node.outputs[0]!])]);
registerRule('Log', (ctx) => [ctx.b.op('Div', [gOnly(ctx), ctx.node.inputs[0]!])]);
registerRule('Sqrt', (ctx) => [ctx.b.op('Div', [ctx.b.op('Mul', [gOnly(ctx), ctx.b.scalar(0.5, 'half')]), ctx.node.outputs[0]!])]);
registerRule('Reciprocal', (ctx) => {
  const y = ctx.node.outputs[0]!;
  return [ctx.b.op('Neg', [ctx.b.op('Mul', [gOnly(ctx), ctx.b.op('Mul', [y, y])])])];
});
registerRule('Softplus', (ctx) => [ctx.b.op('Mul', [gOnly(ctx), preciseSigmoid(ctx.b, ctx.node.inputs[0]!)])]);
registerRule('Atan', (ctx) => {
  const { b } = ctx;
  const x = ctx.node.inputs[0]!;
  return [b.op('Div', [gOnly(ctx), b.op('Add', [b.scalar(1, 'one'), b.op('Mul', [x, x])])])];
});
registerRule('Erf', (ctx) => {
  const { b } = ctx;
  const x = ctx.node.inputs[0]!;
  const slope = b.op('Mul', [b.op('Exp', [b.op('Neg', [b.op('Mul', [x, x])])]), b.scalar(2 / Math.sqrt(Math.PI), 'two_over_sqrt_pi')]);
  return [b.op('Mul', [gOnly(ctx), slope])];
});
registerRule('Sin', (ctx) => [ctx.b.op('Mul', [gOnly(ctx), ctx.b.op('Cos', [ctx.node.inputs[0]!])])]);
registerRule('Cos', (ctx) => [ctx.b.op('Neg', [ctx.b.op('Mul', [gOnly(ctx), ctx.b.op('Sin', [ctx.node.inputs[0]!])])])]);
registerRule('Pow', (ctx) => {
  const { b, node } = ctx;
  const [x, p] = node.inputs as [string, string];
  const exponent = ctx.shapes.get(p);
  if (!exponent || exponent.dims.length > 0 && exponent.dims.some((d) => d !== 1)) throw new Error(`autodiff: Pow ${node.name} needs a scalar exponent`);
  // d/dx x^p = p * x^(p-1); the exponent itself is treated as a constant.
  const pm1 = b.op('Sub', [p, b.scalar(1, 'one')]);
  return [b.op('Mul', [gOnly(ctx), b.op('Mul', [p, b.op('Pow', [x, pm1])])]), null];
});

// ---- casts and layout ----

registerRule('Cast', (ctx) => {
  const from = ctx.shapes.get(ctx.node.inputs[0]!)?.dtype;
  if (from !== 'float32' && from !== 'float16' && from !== 'float64') return [null];
  return [ctx.b.op('Cast', [gOnly(ctx)], { to: i(from === 'float32' ? 1 : from === 'float16' ? 10 : 11) })];
});

const reshapeBack: VjpRule = (ctx) => [reshapeTo(ctx.b, gOnly(ctx), dims(ctx, ctx.node.inputs[0]!)), ...ctx.node.inputs.slice(1).map(() => null)];
for (const op of ['Reshape', 'Flatten', 'Squeeze', 'Unsqueeze']) registerRule(op, reshapeBack);

registerRule('Transpose', (ctx) => {
  const perm = attrInts(ctx.node, 'perm', dims(ctx, ctx.node.inputs[0]!).map((_, k, a) => a.length - 1 - k));
  const inverse = perm.map((_, k) => perm.indexOf(k));
  return [transpose(ctx.b, gOnly(ctx), inverse)];
});

registerRule('Expand', (ctx) => [unbroadcast(ctx.b, gOnly(ctx), dims(ctx, ctx.node.outputs[0]!), dims(ctx, ctx.node.inputs[0]!)), null]);

registerRule('Concat', (ctx) => {
  const { b, node } = ctx;
  const rank = dims(ctx, node.outputs[0]!).length;
  const axis = (attrInt(node, 'axis', 0) + rank) % rank;
  const sizes = node.inputs.map((x) => dims(ctx, x)[axis]!);
  return b.opMulti('Split', [gOnly(ctx), b.constant('split', int64(sizes))], sizes.length, { axis: i(axis) });
});

registerRule('Split', (ctx) => {
  const { b, node } = ctx;
  const rank = dims(ctx, node.inputs[0]!).length;
  const axis = (attrInt(node, 'axis', 0) + rank) % rank;
  const parts = node.outputs.map((o, k) => ctx.gy[k] ?? zerosOf(b, dims(ctx, o)));
  return [b.op('Concat', parts, { axis: i(axis) }), null];
});

registerRule('Where', (ctx) => {
  const { b, node } = ctx;
  const g = gOnly(ctx);
  const gd = dims(ctx, node.outputs[0]!);
  const [c, x, y] = node.inputs as [string, string, string];
  const zero = b.scalar(0, 'zero');
  return [null, unbroadcast(b, b.op('Where', [c, g, zero]), gd, dims(ctx, x)), unbroadcast(b, b.op('Where', [c, zero, g]), gd, dims(ctx, y))];
});

// ---- reductions and normalisation ----

function reduceAxes(ctx: RuleContext): { axes: number[]; keep: boolean } {
  const { node } = ctx;
  const rank = dims(ctx, node.inputs[0]!).length;
  let axes: number[];
  if (node.inputs[1]) {
    const t = ctx.b.graph.initializers.get(node.inputs[1]);
    if (!t) throw new Error(`autodiff: ${node.name} needs constant axes`);
    axes = Array.from(t.data as BigInt64Array, Number);
  } else {
    axes = attrInts(node, 'axes', Array.from({ length: rank }, (_, k) => k));
  }
  return { axes: axes.map((a) => (a + rank) % rank).sort((p, q) => p - q), keep: attrInt(node, 'keepdims', 1) === 1 };
}

function expandBack(ctx: RuleContext, g: string): string {
  const { axes, keep } = reduceAxes(ctx);
  const xd = dims(ctx, ctx.node.inputs[0]!);
  const kept = keep ? g : reshapeTo(ctx.b, g, xd.map((d, k) => (axes.includes(k) ? 1 : d)));
  return ctx.b.op('Expand', [kept, ctx.b.constant('shape', int64(xd))]);
}

registerRule('ReduceSum', (ctx) => [expandBack(ctx, gOnly(ctx)), null]);
registerRule('ReduceMean', (ctx) => {
  const xd = dims(ctx, ctx.node.inputs[0]!);
  const count = reduceAxes(ctx).axes.reduce((n, a) => n * xd[a]!, 1);
  return [expandBack(ctx, ctx.b.op('Mul', [gOnly(ctx), ctx.b.scalar(1 / count, 'inv_count')])), null];
});

/**
 * ReduceMax/ReduceMin: the gradient goes to the extreme elements, split evenly among ties (as
 * torch.amax/amin; torch.max(dim) would give it all to the one index it returns).
 */
function extremeRule(ctx: RuleContext): Array<string | null> {
  const { b, node } = ctx;
  const x = node.inputs[0]!;
  const hit = b.op('Cast', [b.op('Equal', [x, expandBack(ctx, node.outputs[0]!)])], { to: i(1) });
  const share = b.op('Div', [hit, reduceSum(b, hit, reduceAxes(ctx).axes, true)]);
  return [b.op('Mul', [expandBack(ctx, gOnly(ctx)), share]), null];
}
registerRule('ReduceMax', extremeRule);
registerRule('ReduceMin', extremeRule);

registerRule('Softmax', (ctx) => {
  const { b, node } = ctx;
  const y = node.outputs[0]!;
  const rank = dims(ctx, y).length;
  const axis = (attrInt(node, 'axis', -1) + rank) % rank;
  const g = gOnly(ctx);
  const dot = reduceSum(b, b.op('Mul', [g, y]), [axis], true);
  return [b.op('Mul', [y, b.op('Sub', [g, dot])])];
});

registerRule('LogSoftmax', (ctx) => {
  const { b, node } = ctx;
  const y = node.outputs[0]!;
  const rank = dims(ctx, y).length;
  const axis = (attrInt(node, 'axis', -1) + rank) % rank;
  const g = gOnly(ctx);
  return [b.op('Sub', [g, b.op('Mul', [b.op('Exp', [y]), reduceSum(b, g, [axis], true)])])];
});

/**
 * Training BatchNorm (composite): closed-form gradient from the saved batch statistics,
 * dx = gamma*invstd * (dy - mean(dy) - xhat*mean(dy*xhat)); far fewer passes over the activation
 * than differentiating its primitives one by one.
 */
registerRule('LayerNormalization', layerNormRule);
registerRule('BatchNormalization', batchNormInferenceRule);

registerRule('BatchNormTrain', (ctx) => {
  const { b, node } = ctx;
  if (ctx.gy[1] || ctx.gy[2]) throw new Error(`autodiff: ${node.name}: gradients through batch statistics outputs are not supported`);
  const g = gOnly(ctx);
  const [x, gamma] = node.inputs as [string, string];
  const xd = dims(ctx, x);
  const c = xd[1]!;
  const n = xd[0]! * xd[2]! * xd[3]!;
  const eps = attrFloat(node, 'epsilon', 1e-5);
  const [, mean, variance] = node.outputs as [string, string, string];
  const invStd = b.op('Reciprocal', [b.op('Sqrt', [b.op('Add', [variance, b.scalar(eps, 'eps')])])]);
  const xhat = b.op('Mul', [b.op('Sub', [x, mean]), invStd]);
  const dBeta = reduceSum(b, g, [0, 2, 3], true);
  const dGamma = reduceSum(b, b.op('Mul', [g, xhat]), [0, 2, 3], true);
  const k = b.op('Mul', [invStd, reshapeTo(b, gamma, [1, c, 1, 1])]);
  const inv = b.scalar(1 / n, 'inv_n');
  const centredG = b.op('Sub', [b.op('Sub', [g, b.op('Mul', [dBeta, inv])]), b.op('Mul', [xhat, b.op('Mul', [dGamma, inv])])]);
  return [b.op('Mul', [centredG, k]), reshapeTo(b, dGamma, [c]), reshapeTo(b, dBeta, [c])];
});

// ---- linear algebra ----

registerRule('MatMul', (ctx) => {
  const { b, node } = ctx;
  const g = gOnly(ctx);
  const [x, y] = node.inputs as [string, string];
  const xd = dims(ctx, x);
  const yd = dims(ctx, y);
  if (xd.length < 2 || yd.length < 2) throw new Error(`autodiff: MatMul ${node.name} with 1-D operands is not supported`);
  const swap = (d: number[]): number[] => [...d.slice(0, -2).map((_, k) => k), d.length - 1, d.length - 2];
  const gx = b.op('MatMul', [g, transpose(b, y, swap(yd))]);
  const gd = dims(ctx, node.outputs[0]!);
  // A weight shared by a batch of rows (a linear layer on [B, T, K]): one GEMM over all B*T rows
  // instead of B per-image products summed afterwards (a [B, K, N] temporary and a ReduceSum pass).
  if (yd.length === 2 && xd.length > 2 && xd.length === gd.length && xd.slice(0, -1).every((d, k) => d === gd[k])) {
    // -1 rows: no count that changes with the input size (one graph serves every multi-scale size).
    const gw = b.op('MatMul', [transpose(b, reshapeTo(b, x, [-1, xd.at(-1)!]), [1, 0]), reshapeTo(b, g, [-1, gd.at(-1)!])]);
    return [gx, gw];
  }
  const gyv = b.op('MatMul', [transpose(b, x, swap(xd)), g]);
  const batchOf = (d: number[], own: number[]): number[] => [...gd.slice(0, -2), ...own.slice(-2)].slice(gd.length - Math.max(gd.length, d.length));
  return [unbroadcast(b, gx, batchOf(xd, xd), xd), unbroadcast(b, gyv, batchOf(yd, yd), yd)];
});

// ---- convolution and pooling ----

registerRule('Conv', (ctx) => {
  const { b, node } = ctx;
  const g = gOnly(ctx);
  const [x, w, bias] = node.inputs as [string, string, string | undefined];
  const [n, ci, h, wd] = dims(ctx, x) as [number, number, number, number];
  const [co, , kh, kw] = dims(ctx, w) as [number, number, number, number];
  const [, , oh, ow] = dims(ctx, node.outputs[0]!) as [number, number, number, number];
  const [sh, sw] = attrInts(node, 'strides', [1, 1]) as [number, number];
  const pads = attrInts(node, 'pads', [0, 0, 0, 0]);
  const groups = attrInt(node, 'group', 1);
  if (attrInts(node, 'dilations', [1, 1]).some((d) => d !== 1)) throw new Error(`autodiff: dilated Conv ${node.name} is not supported`);
  const pointwise = kh === 1 && kw === 1 && sh === 1 && sw === 1 && pads.every((p) => p === 0);

  const gb = bias ? reduceSum(b, g, [0, 2, 3], false) : null;
  const wd4 = dims(ctx, w);
  // dX reads the weights through a copy that waits for dW and db (emit.ts `after`): dY and X are
  // read by dW and db too, and dX is on the path to every later gradient, so ONNX Runtime's order
  // frees them here instead of when it reaches dW's output at the end.
  const wAfter = (gw: string): string => after(b, w, wd4, gb ? [gw, gb] : [gw]);
  let gx: string;
  let gw: string;
  if (pointwise && groups === 1) {
    // 1x1: dX = W^T dY and dW = sum_n dY X^T, as MatMuls over [N, C, H*W].
    const g3 = reshapeTo(b, g, [n, co, oh * ow]);
    const x3 = reshapeTo(b, x, [n, ci, h * wd]);
    gw = reshapeTo(b, reduceSum(b, b.op('MatMul', [g3, transpose(b, x3, [0, 2, 1])]), [0], false), [co, ci, 1, 1]);
    const w2 = reshapeTo(b, wAfter(gw), [co, ci]);
    gx = reshapeTo(b, b.op('MatMul', [transpose(b, w2, [1, 0]), g3]), [n, ci, h, wd]);
  } else {
    // dW, per group, in one of two formulations chosen by shape (measured on ORT CPU with
    // bench/conv-weight-grad.ts): an explicit im2col (the k*k strided shifts of the padded input stacked
    // on channels) times the output gradient as one GEMM per image wins 1.1-2.3x once there are
    // >= 16 input channels (>= 32 when strided); for thin inputs (the RGB stem) correlating the
    // transposed input with the transposed gradient as a convolution is up to 2x faster.
    const xs = groups === 1 ? [x] : b.opMulti('Split', [x, b.constant('split', int64(Array(groups).fill(ci / groups)))], groups, { axis: i(1) });
    const gs = groups === 1 ? [g] : b.opMulti('Split', [g, b.constant('split', int64(Array(groups).fill(co / groups)))], groups, { axis: i(1) });
    const cig = ci / groups;
    const cog = co / groups;
    const useIm2col = cig >= 16 && ((sh === 1 && sw === 1) || cig >= 32);
    const perGroup = xs.map((xg, k) => (useIm2col
      ? weightGradIm2col(b, xg, gs[k]!, { n, cig, cog, kh, kw, oh, ow, sh, sw, pads })
      : weightGradCorrelation(b, xg, gs[k]!, { kh, kw, oh, ow, sh, sw, pads })));
    gw = perGroup.length === 1 ? perGroup[0]! : b.op('Concat', perGroup, { axis: i(0) });
    // dX: transposed convolution with the same weights; output_padding recovers sizes lost to stride.
    const outPad = [h - ((oh - 1) * sh - pads[0]! - pads[2]! + kh), wd - ((ow - 1) * sw - pads[1]! - pads[3]! + kw)];
    gx = b.op('ConvTranspose', [g, wAfter(gw)], {
      kernel_shape: ints([kh, kw]), strides: ints([sh, sw]), pads: ints(pads), group: i(groups), output_padding: ints(outPad),
    });
  }
  return bias ? [gx, gw, gb] : [gx, gw];
});

interface ConvGeometry {
  kh: number;
  kw: number;
  oh: number;
  ow: number;
  sh: number;
  sw: number;
  pads: number[];
}

function weightGradIm2col(b: GraphBuilder, x: string, g: string, geo: ConvGeometry & { n: number; cig: number; cog: number }): string {
  const { n, cig, cog, kh, kw, oh, ow, sh, sw, pads } = geo;
  const padded = pads.some((p) => p !== 0)
    ? b.op('Pad', [x, b.constant('pads', int64([0, 0, pads[0]!, pads[1]!, 0, 0, pads[2]!, pads[3]!]))], { mode: s('constant') })
    : x;
  const shifts: string[] = [];
  for (let dy = 0; dy < kh; dy++) {
    for (let dx = 0; dx < kw; dx++) {
      shifts.push(b.op('Slice', [padded,
        b.constant('starts', int64([dy, dx])), b.constant('ends', int64([dy + (oh - 1) * sh + 1, dx + (ow - 1) * sw + 1])),
        b.constant('axes', int64([2, 3])), b.constant('steps', int64([sh, sw]))]));
    }
  }
  const cols = reshapeTo(b, b.op('Concat', shifts, { axis: i(1) }), [n, kh * kw * cig, oh * ow]);
  const g3 = reshapeTo(b, g, [n, cog, oh * ow]);
  const summed = reduceSum(b, b.op('MatMul', [g3, transpose(b, cols, [0, 2, 1])]), [0], false); // [cog, kh*kw*cig]
  return reshapeTo(b, transpose(b, reshapeTo(b, summed, [cog, kh * kw, cig]), [0, 2, 1]), [cog, cig, kh, kw]);
}

function weightGradCorrelation(b: GraphBuilder, x: string, g: string, geo: ConvGeometry): string {
  const { kh, kw, sh, sw, pads } = geo;
  // The gradient is the kernel: its [oh, ow] comes from the input, so no attribute depends on the
  // input size and one graph serves every size (graph/passes/share-shapes.ts).
  const corr = b.op('Conv', [transpose(b, x, [1, 0, 2, 3]), transpose(b, g, [1, 0, 2, 3])], {
    dilations: ints([sh, sw]), pads: ints(pads), strides: ints([1, 1]), group: i(1),
  });
  const full = transpose(b, corr, [1, 0, 2, 3]);
  // The correlation spans h + pads - (oh - 1) sh taps: kh at stride 1, and at a stride more where
  // it drops input rows. Strided, it is sliced at every size (a no-op where nothing is dropped), so
  // the graph has the same nodes at every input size.
  if (sh === 1 && sw === 1) return full;
  return b.op('Slice', [full, b.constant('starts', int64([0, 0])), b.constant('ends', int64([kh, kw])), b.constant('axes', int64([2, 3]))]);
}

registerRule('MaxPool', (ctx) => {
  const { b, node } = ctx;
  const xd = dims(ctx, node.inputs[0]!);
  // Route each output gradient to the input element that won the max, adding where windows overlap.
  if (!node.outputs[1]) node.outputs.push(`${node.name}_indices`);
  const total = xd.reduce((p, q) => p * q, 1);
  const flat = b.op('ScatterElements', [
    zerosOf(b, [total]), reshapeTo(b, node.outputs[1]!, [-1]), reshapeTo(b, gOnly(ctx), [-1]),
  ], { axis: i(0), reduction: s('add') });
  return [reshapeTo(b, flat, xd)];
});

registerRule('AveragePool', (ctx) => {
  const { b, node } = ctx;
  const k = attrInts(node, 'kernel_shape', []);
  const st = attrInts(node, 'strides', [1, 1]);
  const pads = attrInts(node, 'pads', [0, 0, 0, 0]);
  if (st.some((v) => v !== 1) || pads.some((v) => v !== 0)) throw new Error(`autodiff: AveragePool ${node.name}: only stride 1 without padding is supported`);
  // Stride 1: each input receives g/k^2 from every window covering it = an average pool of g padded by k-1.
  const [kh, kw] = k as [number, number];
  const padded = b.op('Pad', [gOnly(ctx), b.constant('pads', int64([0, 0, kh - 1, kw - 1, 0, 0, kh - 1, kw - 1]))], { mode: s('constant') });
  return [b.op('AveragePool', [padded], { kernel_shape: ints(k), strides: ints([1, 1]), pads: ints([0, 0, 0, 0]), count_include_pad: i(1) })];
});

registerRule('Resize', (ctx) => {
  const { b, node } = ctx;
  const xd = dims(ctx, node.inputs[0]!) as [number, number, number, number];
  const yd = dims(ctx, node.outputs[0]!) as [number, number, number, number];
  const fy = yd[2] / xd[2];
  const fx = yd[3] / xd[3];
  const mode = node.attrs.mode && 's' in node.attrs.mode ? node.attrs.mode.s : 'nearest';
  if (mode !== 'nearest' || !Number.isInteger(fy) || !Number.isInteger(fx)) throw new Error(`autodiff: Resize ${node.name}: only integer nearest upsampling is supported`);
  // Nearest upsampling by (fy, fx): each input pixel's gradient is the sum over its block.
  const blocks = reshapeTo(b, gOnly(ctx), [xd[0], xd[1], xd[2], fy, xd[3], fx]);
  return [reduceSum(b, blocks, [3, 5], false), ...node.inputs.slice(1).map(() => null)];
});

registerRule('GridSample', gridSampleRule);
for (const [op, rule] of Object.entries(INDEXING_RULES)) registerRule(op, rule);
