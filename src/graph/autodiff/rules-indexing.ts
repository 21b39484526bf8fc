/**
 * Gradient rules of the indexing and layout ops the DETR families use (Gather, GatherND,
 * GatherElements, Slice, Pad, Tile, TopK). Gathers are undone by scatters with reduction='add'
 * into a zero tensor: duplicate indices then accumulate, and the cost is proportional to the
 * gathered size, not the table's (a one-hot MatMul would cost table x gathered). ScatterND moves
 * whole trailing rows per index tuple, so rules arrange the gathered axis in front of contiguous
 * rows where they can.
 */
import { i, s, type GraphBuilder } from '../builder.ts';
import { attrInt } from '../ir.ts';
import { int64 } from '../nn.ts';
import { constInts, dims, gOnly, type RuleContext, type VjpRule } from './context.ts';
import { reduceSum, reshapeTo, transpose, zerosOf } from './emit.ts';

const prod = (d: number[]): number => d.reduce((p, q) => p * q, 1);
const normAxis = (a: number, rank: number): number => (a < 0 ? a + rank : a);

/** Indices as int64 with negative entries counted from the end of `size` (a scalar or a per-last-axis vector). */
function normalizedIndices(ctx: RuleContext, idx: string, size: number | number[]): string {
  const { b } = ctx;
  const typed = ctx.shapes.get(idx)?.dtype === 'int64' ? idx : b.op('Cast', [idx], { to: i(7) });
  const bound = b.constant('bound', int64(Array.isArray(size) ? size : [size], Array.isArray(size) ? [size.length] : []));
  return b.op('Where', [b.op('Less', [typed, b.constant('zero', int64([0], []))]), b.op('Add', [typed, bound]), typed]);
}

function scatterAddND(b: GraphBuilder, target: number[], indices: string, updates: string): string {
  return b.op('ScatterND', [zerosOf(b, target), indices, updates], { reduction: s('add') });
}

/** Gather along `axis`: scatter the gradient rows back with ScatterND (the gathered axis moved in front). */
const gatherRule: VjpRule = (ctx) => {
  const { b, node } = ctx;
  const [data, indices] = node.inputs as [string, string];
  const dd = dims(ctx, data);
  const q = dims(ctx, indices).length;
  const a = normAxis(attrInt(node, 'axis', 0), dd.length);
  const idx = b.op('Unsqueeze', [normalizedIndices(ctx, indices, dd[a]!), b.constant('axes', int64([-1]))]);
  const g = gOnly(ctx);
  if (a === 0) return [scatterAddND(b, dd, idx, g), null];
  // g: pre(a) + I(q) + post -> I + pre + post; scatter into [D[a], pre, post]; move axis 0 back to a.
  const gRank = dd.length - 1 + q;
  const front = [...Array.from({ length: q }, (_, k) => a + k), ...Array.from({ length: a }, (_, k) => k), ...Array.from({ length: gRank - a - q }, (_, k) => a + q + k)];
  const moved = [dd[a]!, ...dd.slice(0, a), ...dd.slice(a + 1)];
  const scattered = scatterAddND(b, moved, idx, transpose(b, g, front));
  const back = dd.map((_, k) => (k < a ? k + 1 : k === a ? 0 : k));
  return [transpose(b, scattered, back), null];
};

/** GatherElements: ScatterElements with reduction='add' of the gradient at the same indices. */
const gatherElementsRule: VjpRule = (ctx) => {
  const { b, node } = ctx;
  const [data, indices] = node.inputs as [string, string];
  const dd = dims(ctx, data);
  const a = normAxis(attrInt(node, 'axis', 0), dd.length);
  const idx = normalizedIndices(ctx, indices, dd[a]!);
  return [b.op('ScatterElements', [zerosOf(b, dd), idx, gOnly(ctx)], { axis: i(a), reduction: s('add') }), null];
};

/**
 * GatherND (with batch_dims): ScatterND needs no batch_dims once the batch axes are flattened and
 * each index tuple is prefixed by its batch position (a constant: shapes are static).
 */
const gatherNDRule: VjpRule = (ctx) => {
  const { b, node } = ctx;
  const [data, indices] = node.inputs as [string, string];
  const dd = dims(ctx, data);
  const id = dims(ctx, indices);
  const bd = attrInt(node, 'batch_dims', 0);
  const m = id[id.length - 1]!;
  const idx = normalizedIndices(ctx, indices, dd.slice(bd, bd + m));
  const g = gOnly(ctx);
  if (bd === 0) return [scatterAddND(b, dd, idx, g), null];
  const batch = prod(dd.slice(0, bd));
  const k = prod(id.slice(bd, -1));
  const rest = dd.slice(bd + m);
  const batchIds = b.constant('batch_ids', int64(Array.from({ length: batch * k }, (_, t) => Math.floor(t / k)), [batch, k, 1]));
  const tuples = b.op('Concat', [batchIds, reshapeTo(b, idx, [batch, k, m])], { axis: i(-1) });
  const scattered = scatterAddND(b, [batch, ...dd.slice(bd)], tuples, reshapeTo(b, g, [batch, k, ...rest]));
  return [reshapeTo(b, scattered, dd), null];
};

/**
 * Slice (positive steps): the gradient is padded back with zeros; a stepped axis first interleaves
 * step-1 zeros after every element (Unsqueeze, Pad, Reshape). Under GraphBuilder.anySize the Pad is
 * always emitted, an empty or whole slice included, so the rule's nodes do not depend on the size.
 */
const sliceRule: VjpRule = (ctx) => {
  const { b, node } = ctx;
  const xd = dims(ctx, node.inputs[0]!);
  const yd = dims(ctx, node.outputs[0]!);
  const rank = xd.length;
  const starts = constInts(ctx, node.inputs[1], 'starts')!;
  const axes = constInts(ctx, node.inputs[3], 'axes') ?? starts.map((_, k) => k);
  const steps = constInts(ctx, node.inputs[4], 'steps') ?? starts.map(() => 1);
  // A graph for several sizes pads even an empty slice (zero rows padded: zeros) or a whole one.
  if (!b.anySize && yd.some((d) => d === 0)) return [zerosOf(b, xd), null, null, null, null];
  let g = gOnly(ctx);
  const curDims = [...yd];
  const before = xd.map(() => 0);
  axes.forEach((ax, k) => {
    const a = normAxis(ax, rank);
    const st = steps[k]!;
    if (st < 1) throw new Error(`autodiff: Slice ${node.name}: step ${st} is not supported (only positive steps)`);
    let start = starts[k]!;
    if (start < 0) start += xd[a]!;
    start = Math.min(Math.max(start, 0), xd[a]!);
    before[a] = start;
    if (st === 1) return;
    const n = curDims[a]!;
    const spread = b.op('Unsqueeze', [g, b.constant('axes', int64([a + 1]))]);
    const padsN = Array<number>(2 * (rank + 1)).fill(0);
    padsN[rank + 1 + a + 1] = st - 1;
    const dims2 = [...curDims];
    dims2[a] = n * st;
    g = reshapeTo(b, b.op('Pad', [spread, b.constant('pads', int64(padsN))], { mode: s('constant') }), dims2);
    const keep = Math.min(n * st, xd[a]! - start);
    if (keep < n * st) g = b.op('Slice', [g, b.constant('starts', int64([0])), b.constant('ends', int64([keep])), b.constant('axes', int64([a]))]);
    curDims[a] = keep;
  });
  const pads = [...before, ...xd.map((d, a) => d - before[a]! - curDims[a]!)];
  const padded = b.anySize || pads.some((p) => p !== 0) ? b.op('Pad', [g, b.constant('pads', int64(pads))], { mode: s('constant') }) : g;
  return [padded, null, null, null, null];
};

/** Constant-mode Pad with non-negative pads: the gradient is the slice of the padded region's interior. */
const padRule: VjpRule = (ctx) => {
  const { b, node } = ctx;
  const mode = node.attrs.mode && 's' in node.attrs.mode ? node.attrs.mode.s : 'constant';
  if (mode !== 'constant') throw new Error(`autodiff: Pad ${node.name}: mode ${mode} is not supported`);
  if (node.inputs[3]) throw new Error(`autodiff: Pad ${node.name}: the axes input is not supported`);
  const xd = dims(ctx, node.inputs[0]!);
  const pads = constInts(ctx, node.inputs[1], 'pads')!;
  if (pads.some((p) => p < 0)) throw new Error(`autodiff: Pad ${node.name}: negative pads are not supported`);
  const starts = xd.map((_, a) => pads[a]!);
  const sliced = b.op('Slice', [gOnly(ctx), b.constant('starts', int64(starts)), b.constant('ends', int64(starts.map((p, a) => p + xd[a]!))), b.constant('axes', int64(xd.map((_, a) => a)))]);
  return [sliced, null, null];
};

/** Tile: each input element receives the sum over its copies ([r0, d0, r1, d1, ...] summed over the r axes). */
const tileRule: VjpRule = (ctx) => {
  const { b, node } = ctx;
  const xd = dims(ctx, node.inputs[0]!);
  const reps = constInts(ctx, node.inputs[1], 'repeats')!;
  const blocks = reshapeTo(b, gOnly(ctx), xd.flatMap((d, a) => [reps[a]!, d]));
  return [reshapeTo(b, reduceSum(b, blocks, xd.map((_, a) => 2 * a), false), xd), null];
};

/** TopK values: routed back to the selected positions (indices carry no gradient; they are distinct per line). */
const topKRule: VjpRule = (ctx) => {
  const { b, node } = ctx;
  const g = ctx.gy[0];
  if (!g) return [null, null];
  const xd = dims(ctx, node.inputs[0]!);
  if (!node.outputs[1]) node.outputs[1] = `${node.name}_indices`;
  const a = normAxis(attrInt(node, 'axis', -1), xd.length);
  return [b.op('ScatterElements', [zerosOf(b, xd), node.outputs[1]!, g], { axis: i(a), reduction: s('add') }), null];
};

export const INDEXING_RULES: Record<string, VjpRule> = {
  Gather: gatherRule,
  GatherElements: gatherElementsRule,
  GatherND: gatherNDRule,
  Slice: sliceRule,
  Pad: padRule,
  Tile: tileRule,
  TopK: topKRule,
};
