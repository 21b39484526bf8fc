/**
 * What a training graph keeps alive from its forward pass for its backward pass: the forward values
 * (outputs of nodes outside `/backward/`) that some backward node reads. Every one of them stays in
 * memory from the moment it is computed until its last backward reader runs, so at the turn from
 * forward to backward they are all alive at once: their sum is the floor of the step's peak, and
 * the part of it that grows with the batch is the per-image slope.
 */
import type { Graph, Node } from '../ir.ts';
import { BYTES_PER_ELEMENT, numel } from '../tensor.ts';
import type { ShapeMap } from './shapes.ts';

export const isBackwardNode = (n: Node): boolean => n.name.startsWith('/backward');

export interface SavedValue {
  value: string;
  /** Op of the forward node that produced it. */
  op: string;
  dtype: string;
  bytes: number;
}

/** The forward values backward nodes read, with their sizes (graph inputs and initializers excluded). */
export function savedForBackward(graph: Graph, shapes: ShapeMap): SavedValue[] {
  const producer = new Map<string, Node>();
  for (const n of graph.nodes) if (!isBackwardNode(n)) for (const o of n.outputs) if (o) producer.set(o, n);
  const seen = new Set<string>();
  const saved: SavedValue[] = [];
  for (const n of graph.nodes) {
    if (!isBackwardNode(n)) continue;
    for (const v of n.inputs) {
      const p = v ? producer.get(v) : undefined;
      if (!p || seen.has(v)) continue;
      seen.add(v);
      const meta = shapes.get(v);
      if (!meta) throw new Error(`saved-for-backward: no shape for ${v}`);
      saved.push({ value: v, op: p.op, dtype: meta.dtype, bytes: numel(meta.dims) * BYTES_PER_ELEMENT[meta.dtype] });
    }
  }
  return saved;
}

/** Bytes by `op/dtype`, largest first. */
export function savedByKind(saved: readonly SavedValue[]): Array<{ kind: string; count: number; bytes: number }> {
  const byKind = new Map<string, { count: number; bytes: number }>();
  for (const s of saved) {
    const k = `${s.op}/${s.dtype}`;
    const e = byKind.get(k) ?? { count: 0, bytes: 0 };
    e.count++;
    e.bytes += s.bytes;
    byKind.set(k, e);
  }
  return [...byKind].map(([kind, e]) => ({ kind, ...e })).sort((a, b) => b.bytes - a.bytes);
}
