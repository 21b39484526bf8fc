/**
 * The order ONNX Runtime executes a graph's nodes in, and the bytes alive over an order.
 *
 * ORT's sequential executor runs its GraphViewer's `ExecutionOrder::DEFAULT` order (the priority-
 * based and memory-efficient orders are session options that no config key of onnxruntime-node
 * reaches): a depth-first walk from the leaf nodes (nodes no other node reads; graph outputs do
 * not count as readers), where a node is emitted once all its producers are. The leaves start on
 * a stack in node-index order, so the leaf with the highest index is walked first, and a node's
 * producers are pushed in ascending index order, so its highest-index producer is walked first.
 * Node indices are the order of the model's node list (Constant nodes become initializers and take
 * none); nodes ORT's optimiser adds get fresh indices after all others.
 */
import type { Graph } from '../ir.ts';

/** ORT's default execution order of `graph`'s nodes, as indices into `graph.nodes`. */
export function ortExecutionOrder(graph: Graph): number[] {
  const nodes = graph.nodes;
  const producer = new Map<string, number>();
  nodes.forEach((n, k) => { for (const o of n.outputs) if (o) producer.set(o, k); });
  const inputsOf: number[][] = nodes.map((n) => {
    const set = new Set<number>();
    for (const v of n.inputs) {
      const p = v ? producer.get(v) : undefined;
      if (p !== undefined) set.add(p);
    }
    return [...set].sort((a, b) => a - b);
  });
  const read = new Array<boolean>(nodes.length).fill(false);
  for (const ins of inputsOf) for (const p of ins) read[p] = true;
  const stack: Array<[number, boolean]> = [];
  nodes.forEach((n, k) => { if (!read[k] && n.op !== 'Constant') stack.push([k, false]); });
  const visited = new Array<boolean>(nodes.length).fill(false);
  const order: number[] = [];
  while (stack.length) {
    const [k, leave] = stack.pop()!;
    if (leave) {
      order.push(k);
      continue;
    }
    if (visited[k]) continue;
    visited[k] = true;
    stack.push([k, true]);
    for (const p of inputsOf[k]!) if (!visited[p]) stack.push([p, false]);
  }
  return order;
}

export interface Liveness {
  /** Largest sum of live bytes, counted while a node's outputs are alive beside its inputs. */
  peak: number;
  /** Position in `order` of the node at the peak. */
  peakAt: number;
  /** Values alive at the peak, with their bytes. */
  peakSet: Map<string, number>;
  /** Live bytes after each step's outputs are allocated (before its dead inputs are freed). */
  curve: number[];
  /** Live bytes after each step, its dead inputs and outputs freed. */
  after: number[];
}

/**
 * Live bytes over `order` (indices into `graph.nodes`) when each value is allocated as its producer
 * runs and freed after its last reader in the order; graph outputs live to the end; graph inputs
 * and initializers are not counted.
 */
export function liveness(graph: Graph, order: readonly number[], bytes: (value: string) => number): Liveness {
  const outputs = new Set(graph.outputs.map((o) => o.name));
  const lastUse = new Map<string, number>();
  order.forEach((k, pos) => { for (const v of graph.nodes[k]!.inputs) if (v) lastUse.set(v, pos); });
  const live = new Map<string, number>();
  let cur = 0, peak = 0, peakAt = 0;
  let peakSet = new Map<string, number>();
  const curve: number[] = [];
  const after: number[] = [];
  order.forEach((k, pos) => {
    const n = graph.nodes[k]!;
    for (const o of n.outputs) if (o && !live.has(o)) { const b = bytes(o); live.set(o, b); cur += b; }
    curve.push(cur);
    if (cur > peak) { peak = cur; peakAt = pos; peakSet = new Map(live); }
    for (const v of new Set([...n.inputs, ...n.outputs])) {
      if (!v || !live.has(v) || outputs.has(v)) continue;
      if ((lastUse.get(v) ?? -1) <= pos) { cur -= live.get(v)!; live.delete(v); }
    }
    after.push(cur);
  });
  return { peak, peakAt, peakSet, curve, after };
}
