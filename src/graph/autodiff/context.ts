/** What a gradient rule receives, and the small readers every rule file shares. */
import type { GraphBuilder } from '../builder.ts';
import type { Node } from '../ir.ts';
import type { ShapeMap } from './shapes.ts';

export interface RuleContext {
  b: GraphBuilder;
  node: Node;
  /** Gradient of each output (null when that output does not reach the loss). */
  gy: Array<string | null>;
  shapes: ShapeMap;
}

export type VjpRule = (ctx: RuleContext) => Array<string | null>;

export const dims = (ctx: RuleContext, v: string): number[] => {
  const m = ctx.shapes.get(v);
  if (!m) throw new Error(`autodiff: no shape for ${v} (input of ${ctx.node.name})`);
  return m.dims;
};

export const gOnly = (ctx: RuleContext): string => {
  const g = ctx.gy[0];
  if (!g) throw new Error(`autodiff: ${ctx.node.name} has no output gradient`);
  return g;
};

/** The values of a constant integer input (axes, pads, repeats...); rules need them static. */
export function constInts(ctx: RuleContext, v: string | undefined, what: string): number[] | null {
  if (!v) return null;
  const t = ctx.b.graph.initializers.get(v);
  if (!t) throw new Error(`autodiff: ${ctx.node.op} ${ctx.node.name} needs constant ${what}`);
  return Array.from(t.data as ArrayLike<number | bigint>, Number);
}
