/**
 * Recomputes cheap forward values inside the backward pass instead of keeping them alive from the
 * forward. A conv block's BatchNorm output, its sigmoid and its SiLU output (the next conv's input,
 * read by that conv's weight gradient) are each one elementwise pass away from the conv output that
 * the BatchNorm gradient keeps anyway: keeping only that one tensor per block instead of four is
 * most of a training step's per-image memory (docs/training-performance.md).
 *
 * A forward value is recomputed when a backward node reads it and it comes from a cheap op (below)
 * whose inputs are themselves available to the backward without extra memory: graph inputs,
 * initializers, small tensors (per-channel scales), values the backward keeps anyway, or values
 * recomputed in turn (at most MAX_DEPTH ops deep). The copy is the same op on the same operand
 * values, so its result is bit-for-bit the forward's: numerics do not change. Commutative binary
 * ops are emitted with their operands swapped (exact in IEEE arithmetic) so ONNX Runtime's
 * common-subexpression elimination does not merge the copy back into the forward node; a copy it
 * does merge just restores the saved value.
 */
import type { Graph, Node } from '../ir.ts';
import { numel } from '../tensor.ts';
import { isBackwardNode } from './saved.ts';
import type { ShapeMap } from './shapes.ts';

/** Elementwise or copy ops that cost one pass over their output. */
const CHEAP = new Set(['Mul', 'Add', 'Sub', 'Neg', 'Sigmoid', 'Identity', 'Concat', 'Split', 'Reshape']);
const COMMUTATIVE = new Set(['Mul', 'Add']);
/**
 * Longest chain of ops recomputed for one value: BatchNorm scale, shift, sigmoid, SiLU, Split,
 * Concat (an ELAN block's concatenation of its split input and its branches; Identity nodes do not
 * count). yolo9c at 640 keeps 417 MiB per image instead of 531 since Identity stopped counting.
 */
const MAX_DEPTH = 6;
/** An operand this many times smaller than the value is free to keep (per-channel statistics). */
const SMALL_RATIO = 64;

export interface RecomputeResult {
  /** Forward values the backward now recomputes. */
  recomputed: number;
  /** Nodes added to the backward. */
  added: number;
}

export function recomputeCheapValues(graph: Graph, shapes: ShapeMap): RecomputeResult {
  const producer = new Map<string, Node>();
  for (const n of graph.nodes) if (!isBackwardNode(n)) for (const o of n.outputs) if (o) producer.set(o, n);
  const readByBackward = new Set<string>();
  for (const n of graph.nodes) if (isBackwardNode(n)) for (const v of n.inputs) if (v && producer.has(v)) readByBackward.add(v);
  const outputs = new Set(graph.outputs.map((o) => o.name));
  const size = (v: string): number | null => {
    const m = shapes.get(v);
    return m ? numel(m.dims) : null;
  };
  const small = (u: string, o: string): boolean => {
    const su = size(u), so = size(o);
    return su !== null && so !== null && su * SMALL_RATIO <= so;
  };

  // Depth of the recompute chain of each recomputable forward value (forward order: operands first).
  const depth = new Map<string, number>();
  for (const n of graph.nodes) {
    if (isBackwardNode(n) || !CHEAP.has(n.op)) continue;
    let d = 0;
    const ok = n.inputs.every((u) => {
      if (!u || !producer.has(u)) return true; // graph input, initializer or omitted
      const du = depth.get(u);
      if (du !== undefined) {
        d = Math.max(d, du);
        return true;
      }
      return readByBackward.has(u) || n.outputs.every((o) => !o || small(u, o));
    });
    // An Identity is no copy (`ensure` reads through it), so it adds no depth.
    const own = n.op === 'Identity' ? d : d + 1;
    if (!ok || own > MAX_DEPTH || n.outputs.some((o) => outputs.has(o))) continue;
    for (const o of n.outputs) if (o) depth.set(o, own);
  }
  // Only values that replace a saved one are worth it: a recomputable value the backward never
  // reads is recomputed only as an operand of one it does read.
  const wanted = [...readByBackward].filter((v) => depth.has(v));
  if (!wanted.length) return { recomputed: 0, added: 0 };

  const copyOf = new Map<string, string>();
  const nodes: Node[] = [];
  let added = 0;
  const ensure = (v: string): string => {
    const have = copyOf.get(v);
    if (have) return have;
    const n = producer.get(v)!;
    if (n.op === 'Identity') {
      const src = n.inputs[0]!;
      const c = depth.has(src) ? ensure(src) : src;
      copyOf.set(v, c);
      return c;
    }
    const inputs = n.inputs.map((u) => (u && depth.has(u) ? ensure(u) : u));
    if (COMMUTATIVE.has(n.op) && inputs.length === 2 && inputs[0] !== inputs[1]) inputs.reverse();
    const outs = n.outputs.map((o) => (o ? `${o}/recompute` : ''));
    nodes.push({ op: n.op, name: `/backward${n.name}/recompute`, inputs, outputs: outs, attrs: n.attrs, ...(n.domain ? { domain: n.domain } : {}) });
    added++;
    n.outputs.forEach((o, k) => {
      if (!o) return;
      copyOf.set(o, outs[k]!);
      const meta = shapes.get(o);
      if (meta) shapes.set(outs[k]!, meta);
    });
    return copyOf.get(v)!;
  };
  const wantedSet = new Set(wanted);
  for (const n of graph.nodes) {
    if (isBackwardNode(n)) n.inputs = n.inputs.map((v) => (v && wantedSet.has(v) ? ensure(v) : v));
    nodes.push(n);
  }
  // `ensure` pushed each copy just before its first reader, after its operands: still topological.
  graph.nodes = nodes;
  return { recomputed: wanted.length, added };
}
