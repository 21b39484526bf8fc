/**
 * Precision pass: runs a float32 graph's compute in float16 or bfloat16. Float weights get half
 * copies, float activations flow in half between nodes that run in half, and Casts are inserted only
 * where a half region meets a float32 one: at the graph inputs and outputs when `keepIO` is set (the
 * quantize contract: callers keep feeding and reading float32), and around ops the target runtime
 * has no half kernel for (ORT's CPU provider has almost no bfloat16 kernels), which stay float32.
 */
import { Graph, type Node } from '../ir.ts';
import { asFloat32, f32ToBf16Array, f32ToF16Array, type DType, type HostTensor } from '../tensor.ts';

export type HalfType = 'float16' | 'bfloat16';

export interface PrecisionOptions {
  dtype: HalfType;
  /** Keep float32 graph inputs/outputs (Casts inside); false declares them half (fp16 export). */
  keepIO: boolean;
  /** Whether the runtime has a kernel for `op` in `dtype`; ops without one stay float32. Default: all. */
  hasKernel?: (op: string) => boolean;
  /** Nodes allowed to run in half (default: all); the others stay float32 (mixed-precision training). */
  region?: (node: Node) => boolean;
}

export interface PrecisionSummary {
  dtype: HalfType;
  /** Nodes now computing in half. */
  halfNodes: number;
  /** Float nodes kept in float32 for want of a half kernel, by op type. */
  keptFloat: Record<string, number>;
  /** Casts this pass inserted (IO boundaries and around float32 islands). */
  castsInserted: number;
  /** Float weights converted to half. */
  halfWeights: number;
}

const ONNX_TYPE: Record<HalfType | 'float32', number> = { float32: 1, float16: 10, bfloat16: 16 };
const DTYPE_OF_ONNX: Record<number, DType> = { 1: 'float32', 6: 'int32', 7: 'int64', 9: 'bool', 10: 'float16', 11: 'float64', 16: 'bfloat16' };

const BOOL_OUT = new Set(['Equal', 'Greater', 'GreaterOrEqual', 'Less', 'LessOrEqual', 'And', 'Or', 'Not', 'IsNaN', 'IsInf']);
const INT64_OUT = new Set(['Shape', 'Size', 'ArgMax', 'ArgMin', 'NonZero']);
/** Ops whose second output holds indices (int64). */
const INDEX_SECOND_OUT = new Set(['TopK', 'MaxPool']);

/**
 * Input slots of each op that carry the type-parametric tensor `T` (float data); the other slots
 * (shapes, axes, split sizes, Resize scales) keep their own types. Ops not listed stay float32.
 */
const T_INPUTS: Record<string, 'all' | number[]> = {
  Conv: 'all', Add: 'all', Sub: 'all', Mul: 'all', Div: 'all', Concat: 'all', Max: 'all', Min: 'all',
  Sigmoid: [0], Relu: [0], Tanh: [0], Softmax: [0], Identity: [0], MaxPool: [0], AveragePool: [0],
  GlobalAveragePool: [0], Split: [0], Reshape: [0], Resize: [0], ReduceSum: [0], ReduceMean: [0],
  Unsqueeze: [0], Squeeze: [0], Expand: [0], Gather: [0], Slice: [0], Transpose: [0], Flatten: [0],
  // Ops of gradient graphs.
  ConvTranspose: 'all', MatMul: 'all', Sum: 'all', Neg: [0], Exp: [0], Where: [1, 2], Pad: [0, 2],
};

/** Ops that only move data: worth running in half only when their input already is half. */
const MOVES_DATA = new Set(['Concat', 'Split', 'Reshape', 'Identity', 'Unsqueeze', 'Squeeze', 'Expand', 'Gather', 'Slice', 'Transpose', 'Flatten']);

function tSlots(n: Node): number[] {
  const t = T_INPUTS[n.op];
  if (!t) return [];
  return (t === 'all' ? n.inputs.map((_, k) => k) : t).filter((k) => k < n.inputs.length && n.inputs[k] !== '');
}

/** Element type of every value in the float32 graph (enough inference for the ops models emit). */
export function inferDtypes(graph: Graph): Map<string, DType> {
  const types = new Map<string, DType>();
  for (const v of graph.inputs) types.set(v.name, v.dtype);
  for (const [name, t] of graph.initializers) types.set(name, t.dtype);
  for (const n of graph.nodes) {
    let out: DType | undefined;
    if (INT64_OUT.has(n.op)) out = 'int64';
    else if (BOOL_OUT.has(n.op)) out = 'bool';
    else if (n.op === 'Where') out = types.get(n.inputs[1]!);
    else if (n.op === 'Cast') {
      const to = n.attrs.to;
      out = to && 'i' in to ? DTYPE_OF_ONNX[to.i] : undefined;
    } else if (n.op === 'Constant' || n.op === 'ConstantOfShape') {
      const v = n.attrs.value;
      out = v && 't' in v ? v.t.dtype : 'float32';
    } else out = n.inputs[0] ? types.get(n.inputs[0]) : undefined;
    n.outputs.forEach((o, k) => types.set(o, k === 1 && INDEX_SECOND_OUT.has(n.op) ? 'int64' : out ?? 'float32'));
  }
  return types;
}

function halfTensor(t: HostTensor, dtype: HalfType): HostTensor {
  const f = asFloat32(t);
  return { dtype, dims: [...t.dims], data: dtype === 'float16' ? f32ToF16Array(f) : f32ToBf16Array(f) };
}

/** Rewrites `graph` in place; returns what was converted. */
export function convertPrecision(graph: Graph, opts: PrecisionOptions): PrecisionSummary {
  const { dtype, keepIO } = opts;
  const hasKernel = opts.hasKernel ?? (() => true);
  const region = opts.region ?? (() => true);
  const types = inferDtypes(graph);
  const isFloat = (v: string): boolean => types.get(v) === 'float32';
  const summary: PrecisionSummary = { dtype, halfNodes: 0, keptFloat: {}, castsInserted: 0, halfWeights: 0 };

  // Values that natively hold half data: graph inputs (without keepIO) and outputs of half nodes.
  const halfNative = new Set<string>();
  if (!keepIO) for (const v of graph.inputs) if (v.dtype === 'float32') halfNative.add(v.name);
  const runsHalf = new Set<Node>();
  for (const n of graph.nodes) {
    const slots = tSlots(n);
    if (slots.length === 0 || !slots.every((k) => isFloat(n.inputs[k]!)) || !region(n)) continue; // not float compute, or kept float32
    const fedHalf = slots.some((k) => halfNative.has(n.inputs[k]!));
    if (MOVES_DATA.has(n.op) && !fedHalf) continue;
    if (!hasKernel(n.op)) {
      summary.keptFloat[n.op] = (summary.keptFloat[n.op] ?? 0) + 1;
      continue;
    }
    runsHalf.add(n);
    for (const o of n.outputs) if (isFloat(o)) halfNative.add(o);
  }
  summary.halfNodes = runsHalf.size;

  // Graph outputs that must stay float32 but are produced in half: the producer writes a renamed value.
  const renamed = new Map<string, string>();
  if (keepIO) for (const o of graph.outputs) if (halfNative.has(o.name)) renamed.set(o.name, `${o.name}__${dtype}`);
  const halfValueName = (v: string): string => renamed.get(v) ?? v;

  const out: Node[] = [];
  const halfOf = new Map<string, string>();
  const floatOf = new Map<string, string>();
  const cast = (from: string, to: string, type: HalfType | 'float32'): void => {
    out.push({ op: 'Cast', name: `/precision/${to}/Cast`, inputs: [from], outputs: [to], attrs: { to: { i: ONNX_TYPE[type] } } });
    summary.castsInserted++;
  };
  const asHalf = (v: string): string => {
    if (halfNative.has(v)) return halfValueName(v);
    let h = halfOf.get(v);
    if (h) return h;
    h = `${v}__${dtype}`;
    const init = graph.initializers.get(v);
    if (init) {
      graph.initializers.set(h, halfTensor(init, dtype));
      summary.halfWeights++;
    } else cast(v, h, dtype);
    halfOf.set(v, h);
    return h;
  };
  const asFloat = (v: string): string => {
    if (!halfNative.has(v)) return v;
    let f = floatOf.get(v);
    if (!f) {
      f = `${v}__float32`;
      cast(halfValueName(v), f, 'float32');
      floatOf.set(v, f);
    }
    return f;
  };

  const widened = new Map<string, string>();
  const widenedWeight = (v: string): string => {
    let w = widened.get(v);
    if (!w) {
      w = `${v}__${dtype}__float32`;
      cast(asHalf(v), w, 'float32');
      widened.set(v, w);
    }
    return w;
  };

  for (const n of graph.nodes) {
    const slots = tSlots(n);
    if (runsHalf.has(n)) {
      for (const k of slots) n.inputs[k] = asHalf(n.inputs[k]!);
      n.outputs = n.outputs.map(halfValueName);
    } else {
      n.inputs = n.inputs.map((v) => (v && halfNative.has(v) ? asFloat(v) : v));
      // A float32 island (no half kernel) still holds half weights: they are rounded to half, then
      // widened to compute. Nodes outside the region keep the float32 originals.
      if (slots.length && slots.every((k) => isFloat(n.inputs[k]!)) && region(n)) {
        for (const k of slots) if (graph.initializers.has(n.inputs[k]!)) n.inputs[k] = widenedWeight(n.inputs[k]!);
      }
    }
    out.push(n);
  }
  for (const o of graph.outputs) {
    if (!halfNative.has(o.name)) continue;
    if (keepIO) cast(halfValueName(o.name), o.name, 'float32');
    else o.dtype = dtype;
  }
  if (!keepIO) for (const v of graph.inputs) if (v.dtype === 'float32') v.dtype = dtype;
  graph.nodes = out;
  graph.pruneInitializers();
  return summary;
}

/**
 * A one-node model to ask a runtime whether it has a half kernel for `node`'s op: float32 inputs
 * cast to half, the node with its attributes and its constant (non-float) inputs, outputs cast back
 * (Node's ORT binding cannot even declare bfloat16 graph inputs).
 */
export function kernelProbeGraph(graph: Graph, node: Node, dtype: HalfType): Graph {
  const types = inferDtypes(graph);
  const probe = new Graph(`probe_${node.op}`);
  const slots = new Set(tSlots(node));
  const inputs = node.inputs.map((v, k) => {
    if (!v) return v;
    const t = types.get(v) ?? 'float32';
    const init = graph.initializers.get(v);
    if (!slots.has(k)) {
      if (init) probe.initializers.set(v, init);
      else probe.inputs.push({ name: v, dtype: t, shape: [] });
      return v;
    }
    probe.inputs.push({ name: `in${k}`, dtype: 'float32', shape: init ? init.dims : [] });
    probe.nodes.push({ op: 'Cast', name: `/cast_in${k}`, inputs: [`in${k}`], outputs: [`h${k}`], attrs: { to: { i: ONNX_TYPE[dtype] } } });
    return `h${k}`;
  });
  // Symbolic ranks are unknown here; give float inputs a plausible rank so shape inference passes.
  for (const v of probe.inputs) if (v.shape.length === 0 && v.dtype === 'float32') v.shape = ['a', 'b', 'c', 'd'];
  for (const v of probe.inputs) if (v.shape.length === 0) v.shape = ['n'];
  const outs = node.outputs.map((_, k) => `o${k}`);
  probe.nodes.push({ ...node, name: `/probe/${node.op}`, inputs, outputs: outs });
  outs.forEach((o, k) => {
    probe.nodes.push({ op: 'Cast', name: `/cast_out${k}`, inputs: [o], outputs: [`y${k}`], attrs: { to: { i: 1 } } });
    probe.outputs.push({ name: `y${k}`, dtype: 'float32', shape: [] });
  });
  return probe;
}

/** The first float-compute node of each op type: what kernel probes need to ask about. */
export function floatOpsOf(graph: Graph): Node[] {
  const types = inferDtypes(graph);
  const seen = new Map<string, Node>();
  for (const n of graph.nodes) {
    const slots = tSlots(n);
    if (slots.length && slots.every((k) => types.get(n.inputs[k]!) === 'float32') && !seen.has(n.op)) seen.set(n.op, n);
  }
  return [...seen.values()];
}
