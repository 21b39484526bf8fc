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

/** What `orderLike` needs of a node (an IR node or a parsed NodeProto's fields). */
export interface NodeLike {
  name: string;
  inputs: readonly string[];
  outputs: readonly string[];
}

/**
 * A topological order of `nodes` (ORT's optimised form of `reference`: fused and renamed nodes, new
 * indices) that follows `reference`'s own execution order: each node takes the position in
 * `ortExecutionOrder(reference)` of the reference node that produced one of its outputs, else of
 * the reference node with its name or the longest prefix of its name, else of its latest producer;
 * then the ready node of the lowest position goes first. Written in this order, the optimised model
 * gets its node indices from it when ORT loads it, and ORT's depth-first order over those indices
 * runs close to the reference's instead of wherever its optimiser's renumbering led (yolo9c 320 b1:
 * 400 MiB live at the peak against 183, bench/ort-order-profile.ts).
 */
export function orderLike(nodes: readonly NodeLike[], reference: Graph): number[] {
  const refOrder = ortExecutionOrder(reference);
  const byOutput = new Map<string, number>();
  const byName = new Map<string, number>();
  refOrder.forEach((k, pos) => {
    const n = reference.nodes[k]!;
    byName.set(n.name, pos);
    for (const o of n.outputs) if (o) byOutput.set(o, pos);
  });
  const producer = new Map<string, number>();
  nodes.forEach((n, k) => { for (const o of n.outputs) if (o) producer.set(o, k); });
  const inputsOf = nodes.map((n) => [...new Set(n.inputs.map((v) => producer.get(v)).filter((p): p is number => p !== undefined))]);
  const direct = nodes.map((n) => {
    for (const o of n.outputs) {
      const p = byOutput.get(o);
      if (p !== undefined) return p;
    }
    for (let name = n.name; name.length; name = name.slice(0, Math.max(0, name.lastIndexOf('/')))) {
      const p = byName.get(name) ?? byName.get(name.replace(/\/$/, ''));
      if (p !== undefined) return p;
      if (!name.includes('/')) break;
    }
    return undefined;
  });
  const consumers: number[][] = nodes.map(() => []);
  const pending = inputsOf.map((ins) => ins.length);
  inputsOf.forEach((ins, k) => { for (const p of ins) consumers[p]!.push(k); });
  // A binary heap of ready nodes by key (an unmapped node's key is its latest producer's).
  const key = new Array<number>(nodes.length).fill(0);
  const heap: number[] = [];
  const less = (a: number, b: number): boolean => key[a]! < key[b]! || (key[a] === key[b] && a < b);
  const push = (k: number): void => {
    key[k] = direct[k] ?? Math.max(0, ...inputsOf[k]!.map((p) => key[p]!));
    heap.push(k);
    for (let c = heap.length - 1; c > 0;) {
      const p = (c - 1) >> 1;
      if (!less(heap[c]!, heap[p]!)) break;
      [heap[c], heap[p]] = [heap[p]!, heap[c]!];
      c = p;
    }
  };
  const pop = (): number => {
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length) {
      heap[0] = last;
      for (let p = 0; ;) {
        const l = 2 * p + 1, r = l + 1;
        let m = p;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === p) break;
        [heap[m], heap[p]] = [heap[p]!, heap[m]!];
        p = m;
      }
    }
    return top;
  };
  pending.forEach((d, k) => { if (!d) push(k); });
  const order: number[] = [];
  while (heap.length) {
    const k = pop();
    order.push(k);
    for (const c of consumers[k]!) if (--pending[c]! === 0) push(c);
  }
  if (order.length !== nodes.length) throw new Error(`orderLike: the graph has a cycle (${nodes.length - order.length} nodes unordered)`);
  return order;
}
