/**
 * Removes Identity nodes, their readers reading the Identity's input instead. The graph builder and
 * the passes before a session leave many (autodiff's stop-gradients, the composite ops' renamed
 * outputs, one per gradient and running-statistic output: yolo9t's train graph has 2,234 of its
 * 20,841 nodes), which ONNX Runtime at optimisation level 'basic' and above removes itself, each of
 * its passes over the graph costing time in proportion to its nodes; at level 'disabled' each one
 * runs as a kernel. An Identity that names a graph output gives its name to the value it copies
 * instead, when that value is a node's own (not an input, initializer or other output). Exact: an
 * Identity computes nothing.
 */
import type { Graph, Node } from '../ir.ts';

/** Bypasses and drops the Identity nodes (see above); returns how many went. */
export function eliminateIdentities(graph: Graph): number {
  const outputs = new Set(graph.outputs.map((o) => o.name));
  const external = new Set([...graph.inputs.map((v) => v.name), ...graph.initializers.keys()]);
  // Values an output Identity can hand its name to: produced by a node, read by one output Identity only.
  const outputReads = new Map<string, number>();
  for (const n of graph.nodes) if (n.op === 'Identity' && outputs.has(n.outputs[0]!)) outputReads.set(n.inputs[0]!, (outputReads.get(n.inputs[0]!) ?? 0) + 1);
  const renamed = new Map<string, string>();
  for (const n of graph.nodes) {
    const [src, out] = [n.inputs[0]!, n.outputs[0]!];
    if (n.op === 'Identity' && outputs.has(out) && !external.has(src) && !outputs.has(src) && outputReads.get(src) === 1 && !renamed.has(src)) renamed.set(src, out);
  }
  const source = new Map<string, string>();
  const resolve = (v: string): string => {
    const s = source.get(v) ?? v;
    return renamed.get(s) ?? s;
  };
  const kept: Node[] = [];
  for (const n of graph.nodes) {
    n.inputs = n.inputs.map((v) => (v ? resolve(v) : v));
    const out = n.outputs[0];
    if (n.op === 'Identity' && out && (!outputs.has(out) || n.inputs[0] === out)) {
      if (!outputs.has(out)) source.set(out, n.inputs[0]!);
      continue;
    }
    n.outputs = n.outputs.map((o) => (o ? renamed.get(o) ?? o : o));
    kept.push(n);
  }
  const removed = graph.nodes.length - kept.length;
  graph.nodes = kept;
  return removed;
}
