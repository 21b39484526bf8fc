/**
 * Replaces `Size` and `Shape` nodes whose input has a static shape by constants.
 *
 * Such a node reads nothing of its input's data, but to ONNX Runtime it is a reader like any
 * other: the input stays allocated until the node has run. BatchNorm's running-variance update
 * takes `Size` of the conv output (n = N*H*W for the unbiased correction); the update feeds only a
 * graph output, so ORT's execution order (graph/passes/exec-order.ts: a depth-first walk from the
 * leaves, the running-statistic outputs last) ran it at the end of the step, and every conv output
 * of the forward stayed alive through the whole backward. As a constant the count costs nothing.
 * The value is the same, so results are too.
 */
import type { Graph } from '../ir.ts';
import type { ShapeMap } from '../autodiff/shapes.ts';

/** Folds the Size/Shape nodes over statically shaped values; returns how many. */
export function foldStaticSizes(graph: Graph, shapes: ShapeMap): number {
  const outputs = new Set(graph.outputs.map((o) => o.name));
  let folded = 0;
  graph.nodes = graph.nodes.filter((n) => {
    if ((n.op !== 'Size' && n.op !== 'Shape') || n.domain || Object.keys(n.attrs).length) return true;
    const meta = shapes.get(n.inputs[0] ?? '');
    const out = n.outputs[0];
    if (!meta || !out || outputs.has(out) || graph.initializers.has(out)) return true;
    const dims = meta.dims;
    if (!dims.every((d) => Number.isInteger(d) && d >= 0)) return true;
    const data = n.op === 'Size' ? BigInt64Array.of(BigInt(dims.reduce((p, q) => p * q, 1))) : BigInt64Array.from(dims.map(BigInt));
    graph.initializers.set(out, { dtype: 'int64', dims: n.op === 'Size' ? [] : [dims.length], data });
    folded++;
    return false;
  });
  return folded;
}

/**
 * Drops nodes whose outputs nothing reads and no graph output names (a gradient rule's input
 * gradient for a value that needs none, e.g. the stem conv's dX): ONNX Runtime would run them, and
 * as leaves of its order (exec-order.ts) it runs them last, holding what they read. Repeats until
 * none is left; returns how many went.
 */
export function pruneDeadNodes(graph: Graph): number {
  const outputs = new Set(graph.outputs.map((o) => o.name));
  let removed = 0;
  for (;;) {
    const read = new Set<string>(outputs);
    for (const n of graph.nodes) for (const v of n.inputs) if (v) read.add(v);
    const kept = graph.nodes.filter((n) => n.outputs.some((o) => o && read.has(o)));
    if (kept.length === graph.nodes.length) break;
    removed += graph.nodes.length - kept.length;
    graph.nodes = kept;
  }
  if (removed) graph.pruneInitializers();
  return removed;
}
