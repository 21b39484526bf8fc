/**
 * A float64 reference interpreter for the graph IR. It runs any graph made of the ops in
 * kernels.ts with every float value held in float64 and every sum accumulated in float64, so its
 * results are the exact-arithmetic answer to about 1e-12 relative: the yardstick for telling an
 * implementation difference from float32 rounding noise. Plain JS on one thread: RF-DETR-n's
 * fixture train step (6,942 nodes) takes about 4 minutes, mostly MatMul (matmul.ts).
 */
import type { Graph } from '../ir.ts';
import type { HostTensor } from '../tensor.ts';
import type { F64 } from './array.ts';
import { KERNELS } from './kernels.ts';

export function toF64(t: HostTensor): F64 {
  if (t.dtype === 'float16' || t.dtype === 'bfloat16') throw new Error('the float64 interpreter takes float32/float64/integer tensors');
  const data = t.data instanceof BigInt64Array ? Float64Array.from(t.data, Number) : Float64Array.from(t.data as ArrayLike<number>);
  return { dims: [...t.dims], data };
}

export interface InterpretOptions {
  /** Called after each node with its index and the node count (progress for long graphs). */
  onNode?: (done: number, total: number) => void;
}

/** Runs `graph` with `feeds` (by input name) and returns the requested outputs (default: all). */
export function interpret(graph: Graph, feeds: Record<string, HostTensor | F64>, outputs?: string[], options: InterpretOptions = {}): Record<string, F64> {
  const values = new Map<string, F64>();
  for (const [name, t] of graph.initializers) values.set(name, toF64(t));
  for (const input of graph.inputs) {
    const t = feeds[input.name];
    if (!t) throw new Error(`no feed for graph input ${input.name}`);
    values.set(input.name, t.data instanceof Float64Array && !('dtype' in t) ? (t as F64) : toF64(t as HostTensor));
  }
  const wanted = outputs ?? graph.outputs.map((o) => o.name);
  // Free each value after its last reader: a training graph's intermediates would not fit otherwise.
  const lastUse = new Map<string, number>();
  graph.nodes.forEach((n, k) => n.inputs.forEach((v) => v && lastUse.set(v, k)));
  const keep = new Set(wanted);
  graph.nodes.forEach((node, k) => {
    const kernel = KERNELS[node.op];
    if (!kernel || (node.domain && node.domain !== 'ai.onnx')) throw new Error(`the float64 interpreter has no kernel for ${node.domain ? node.domain + '.' : ''}${node.op} (${node.name})`);
    const args = node.inputs.map((v) => {
      if (!v) return undefined;
      const t = values.get(v);
      if (!t) throw new Error(`${node.name}: value ${v} is not computed yet`);
      return t;
    });
    const results = kernel(args, node);
    node.outputs.forEach((name, j) => {
      if (name && results[j]) values.set(name, results[j]!);
    });
    for (const v of node.inputs) if (v && lastUse.get(v) === k && !keep.has(v) && !graph.initializers.has(v)) values.delete(v);
    options.onNode?.(k + 1, graph.nodes.length);
  });
  const out: Record<string, F64> = {};
  for (const name of wanted) {
    const t = values.get(name);
    if (!t) throw new Error(`graph output ${name} was not produced`);
    out[name] = t;
  }
  return out;
}
