/**
 * Reverse-mode automatic differentiation over the IR. Given a scalar value and the values to
 * differentiate with respect to, it appends gradient nodes to the same graph (named
 * `/backward/<forward node name>/...`, so profiles attribute them to the backward phase) and
 * returns the gradient value of each requested input.
 */
import { GraphBuilder } from '../builder.ts';
import type { Graph, Node } from '../ir.ts';
import { isStopGradient, NON_DIFFERENTIABLE, ruleFor } from './rules.ts';
import type { ShapeMap } from './shapes.ts';
import { zerosOf } from './emit.ts';

export interface GradientOptions {
  /** Scalar (or any-shaped; seeded with ones) value to differentiate. */
  loss: string;
  /** Values to differentiate with respect to (graph inputs or initializers). */
  wrt: string[];
  /** Static shapes of every value (see probeShapes). */
  shapes: ShapeMap;
  /** The graph serves several input sizes (GraphBuilder.anySize); default false. */
  anySize?: boolean;
}

/** Values that depend on any of `sources` (forward sweep). */
function dependents(nodes: Node[], sources: Iterable<string>): Set<string> {
  const live = new Set(sources);
  for (const n of nodes) {
    if (NON_DIFFERENTIABLE.has(n.op) || isStopGradient(n)) continue;
    if (n.inputs.some((v) => live.has(v))) for (const o of n.outputs) live.add(o);
  }
  return live;
}

/** Values the target depends on (backward sweep). */
function ancestors(nodes: Node[], target: string): Set<string> {
  const need = new Set([target]);
  for (let k = nodes.length - 1; k >= 0; k--) {
    const n = nodes[k]!;
    if (n.outputs.some((o) => need.has(o))) for (const v of n.inputs) if (v) need.add(v);
  }
  return need;
}

export function appendGradients(graph: Graph, opts: GradientOptions): Map<string, string> {
  const b = new GraphBuilder(graph);
  b.anySize = opts.anySize === true;
  const forward = [...graph.nodes];
  const live = dependents(forward, opts.wrt);
  const needed = ancestors(forward, opts.loss);
  const pending = new Map<string, string[]>();
  const add = (v: string, g: string): void => {
    const list = pending.get(v);
    if (list) list.push(g); else pending.set(v, [g]);
  };
  const collect = (v: string): string | null => {
    const list = pending.get(v);
    if (!list?.length) return null;
    if (list.length === 1) return list[0]!;
    // In the backward scope, so profiles and the saved-activation accounting see it as backward.
    const summed = b.scope('backward', () => b.op('Sum', list));
    pending.set(v, [summed]);
    return summed;
  };

  const lossDims = opts.shapes.get(opts.loss)?.dims ?? [];
  b.scope('backward', () => add(opts.loss, b.op('Expand', [b.scalar(1, 'seed'), b.constant('shape', { dtype: 'int64', dims: [lossDims.length], data: BigInt64Array.from(lossDims.map(BigInt)) })])));

  for (let k = forward.length - 1; k >= 0; k--) {
    const node = forward[k]!;
    if (!node.outputs.some((o) => live.has(o) && needed.has(o))) continue;
    if (NON_DIFFERENTIABLE.has(node.op)) continue;
    const gy = node.outputs.map((o) => (needed.has(o) ? collect(o) : null));
    if (gy.every((g) => g === null)) continue;
    const rule = ruleFor(node.op);
    if (!rule) throw new Error(`autodiff: no gradient rule for ${node.op} (node ${node.name})`);
    const grads = b.scope(`backward${node.name}`, () => rule({ b, node, gy, shapes: opts.shapes }));
    node.inputs.forEach((v, idx) => {
      const g = grads[idx];
      if (g && v && live.has(v)) add(v, g);
    });
  }

  const out = new Map<string, string>();
  for (const w of opts.wrt) {
    const g = collect(w);
    out.set(w, g ?? b.scope('backward', () => zerosOf(b, opts.shapes.get(w)?.dims ?? [])));
  }
  return out;
}
