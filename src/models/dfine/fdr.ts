/**
 * Fine-grained distribution refinement helpers: the bin values W(n), the Integral
 * (per-edge softmax dotted with W), distance2bbox and inverse_sigmoid.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { concat, float32, reshape, slice, softmax } from '../../graph/nn.ts';

/**
 * W(n) as the eval model computes it, in float32 torch arithmetic: a = |up|*|reg_scale|,
 * s = (a + 1)^(2/(R-2)); [-2a, -(s^k - 1) for k = R/2-1..1, 0, s^k - 1 for k = 1..R/2-1, 2a].
 */
export function weightingFunction(regMax: number, up: number, regScale: number): Float32Array {
  const f = Math.fround;
  const a = f(Math.abs(up) * Math.abs(regScale));
  const a2 = f(a * 2);
  const step = f(f(a + 1) ** f(2 / (regMax - 2)));
  const left: number[] = [];
  for (let k = regMax / 2 - 1; k > 0; k--) left.push(f(-f(step ** k) + 1));
  const right: number[] = [];
  for (let k = 1; k < regMax / 2; k++) right.push(f(f(step ** k) - 1));
  return Float32Array.from([-a2, ...left, 0, ...right, a2]);
}

/** corners [B, Q, 4*(R+1)] -> distances [B, Q, 4] in W units. */
export function integral(b: GraphBuilder, corners: string, project: Float32Array): string {
  return b.scope('integral', () => {
    const bins = project.length;
    const p = softmax(b, reshape(b, corners, [0, 0, 4, bins]), -1);
    const d = b.op('MatMul', [p, b.constant('project', float32(project, [bins, 1]))]);
    return reshape(b, d, [0, 0, 4]);
  });
}

/** Box (cx, cy, w, h) from reference boxes and edge distances: x1 = cx - (rs/2 + d_l) * (w / rs), ...; returned as cxcywh. */
export function distance2bbox(b: GraphBuilder, ref: string, dist: string, regScale: number): string {
  return b.scope('distance2bbox', () => {
    const rs = Math.abs(regScale);
    const part = (x: string, k: number): string => slice(b, x, -1, k, k + 1);
    const [cx, cy, w, h] = [0, 1, 2, 3].map((k) => part(ref, k)) as [string, string, string, string];
    const halfRs = b.scalar(0.5 * rs, 'half_rs');
    const rsK = b.scalar(rs, 'reg_scale');
    const edge = (centre: string, size: string, k: number, sign: 'Sub' | 'Add'): string =>
      b.op(sign, [centre, b.op('Mul', [b.op('Add', [halfRs, part(dist, k)]), b.op('Div', [size, rsK])])]);
    const x1 = edge(cx, w, 0, 'Sub');
    const y1 = edge(cy, h, 1, 'Sub');
    const x2 = edge(cx, w, 2, 'Add');
    const y2 = edge(cy, h, 3, 'Add');
    const half = b.scalar(2, 'two');
    return concat(b, [b.op('Div', [b.op('Add', [x1, x2]), half]), b.op('Div', [b.op('Add', [y1, y2]), half]), b.op('Sub', [x2, x1]), b.op('Sub', [y2, y1])], -1);
  });
}

/** log(max(x', 1e-5) / max(1 - x', 1e-5)), x' = clip(x, 0, 1). */
export function inverseSigmoid(b: GraphBuilder, x: string): string {
  return b.scope('inverse_sigmoid', () => {
    const c = b.op('Clip', [x, b.scalar(0, 'zero'), b.scalar(1, 'one')]);
    const eps = b.scalar(1e-5, 'eps');
    return b.op('Log', [b.op('Div', [b.op('Max', [c, eps]), b.op('Max', [b.op('Sub', [b.scalar(1, 'one'), c]), eps])])]);
  });
}
