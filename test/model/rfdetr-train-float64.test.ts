/**
 * RF-DETR n's train step (forward + loss + backward, the graph rfdetr-train-gradients.test.ts
 * checks against the original) evaluated exactly: the float64 interpreter runs every op of the
 * graph. Two checks against that exact evaluation: the gradient graph is the derivative of the
 * float64 loss (a central difference along the gradient, the detached values held, as the gradient
 * graph treats them), and ONNX Runtime's float32 losses and gradients lie within float32's noise of
 * it. The first catches a wrong backward rule (GELU's Erf slope 0.1% off: 2.8e-5 against the 1e-5
 * gate), the second a wrong kernel or a float32-fragile formulation (the interpreter's LayerNorm eps
 * x10: loss_total 2.5e-4 off, the sampling offsets' gradient 4.8e-3).
 *
 * A smaller step than the fixture's so the interpreter's plain JS takes well under a minute: the
 * fixture's weights and the first image's targets, the image subsampled to 64x64 (16 tokens, so
 * k = 16 < 300 proposals per group), batch 1, and 2 proposal groups (600 queries) instead of 13.
 * Two groups run the same ops as thirteen (group-restricted self-attention, per-group heads and
 * proposals, the groups' concatenation) at a seventh of the decoder's cost.
 *
 * Gates from float32's noise on this step. Relative L2 from float64 over the 320 non-zero parameter
 * gradients: median 5.6e-5, 90th percentile 6.6e-5, the worst 8.3e-4 (decoder layer 0's FFN
 * linear1, and what lies upstream of its ReLU: query_feat, refpoint_embed, layer 0's
 * cross-attention, 6.6e-4 to 7.5e-4). The image moved by one float32 ulp moves those same gradients
 * by 4e-4 to 6e-4 in float32, so their distance is the conditioning of the step (inputs near a
 * ReLU's kink), not an error. Gates: each within 2e-3, 90% within 2e-4, grad_global_l2 within 2e-5
 * (measured 5.2e-6), each loss within 1e-6 (measured up to 8.1e-8). The 12 ViT key biases'
 * gradients are 0 in exact arithmetic (softmax over keys ignores a shift shared by all keys;
 * float64 gives ~3e-16): ours must be under 1e-9 of the global norm (measured 3e-11).
 *
 * The central difference (step 1e-8 along each parameter tensor's unit gradient direction) agrees
 * with the gradients' sum of norms to 2.1e-6 (gate 1e-5); its error falls with the step (1.4e-4
 * at 1e-5, 1.2e-5 at 1e-7), as kinks crossed by the move (the decoder's ReLUs) make it and a wrong
 * rule's fixed offset would not; moving only the heads, the encoder heads or the projector's last
 * norm, it agrees to 1e-9. 36 s alone on 2 cores (the float64 step 12 s of it).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { F64 } from '../../src/graph/interpret/array.ts';
import { isStopGradient } from '../../src/graph/autodiff/rules.ts';
import { Graph } from '../../src/graph/ir.ts';
import { interpret } from '../../src/graph/interpret/interpreter.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { relL2 } from '../helpers/compare.ts';
import { rfdetrFixtureStep, rfdetrTrainGraph, runGraph, type RfdetrFixtureStep, type RfdetrTrainGraph } from '../helpers/rfdetr-train-graph.ts';

const CONFIG = { size: 64, batch: 1, groups: 2 } as const;
/** Step of the central difference along the unit direction of each parameter tensor's gradient. */
const EPS = 1e-8;

function l2Norm(a: ArrayLike<number>): number {
  let s = 0;
  for (let k = 0; k < a.length; k++) s += a[k]! * a[k]!;
  return Math.sqrt(s);
}

/**
 * `graph` with float64 values for the named initializers and the outputs of its StopGradient nodes
 * held at `stops` (constants, as the gradient graph treats them).
 */
function frozen(graph: Graph, params: Map<string, Float64Array>, stops: Record<string, F64>): Graph {
  const g = new Graph(graph.name);
  g.nodes = graph.nodes.filter((n) => !isStopGradient(n));
  g.inputs = graph.inputs;
  g.outputs = graph.outputs;
  g.initializers = new Map(graph.initializers);
  for (const [k, data] of params) g.initializers.set(k, { dtype: 'float64', dims: [...graph.initializers.get(k)!.dims], data });
  for (const [k, t] of Object.entries(stops)) g.initializers.set(k, { dtype: 'float64', dims: t.dims, data: t.data });
  return g;
}

describe('RF-DETR n train step: float32 (ONNX Runtime) against float64 (the interpreter)', () => {
  let step: RfdetrFixtureStep;
  let g: RfdetrTrainGraph;
  let f32: Record<string, HostTensor>;
  let f64: Record<string, F64>;

  before(async () => {
    step = await rfdetrFixtureStep(CONFIG);
    g = await rfdetrTrainGraph(step, { gradients: true, groups: CONFIG.groups });
    f32 = await runGraph(g.graph, g.feeds);
    const t = Date.now();
    f64 = interpret(g.graph, g.feeds, ['loss_total', ...g.keys.map((k) => `loss.${k}`), ...g.wrt.map((k) => `grad.${k}`)]);
    console.log(`# float64 step: ${g.graph.nodes.length} nodes in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  });

  it('the gradient graph in float64 is the derivative of the float64 loss (central difference along the gradient)', async () => {
    // theta +- EPS v, v the unit direction of each parameter tensor's float64 gradient: the
    // directional derivative is then the sum of the gradient tensors' norms, every term positive.
    // The detached values (the proposal boxes the queries reference) stay at theta's.
    const fwd = await rfdetrTrainGraph(step, { gradients: false, groups: CONFIG.groups });
    const stopNames = fwd.graph.nodes.filter(isStopGradient).map((n) => n.outputs[0]!);
    assert.ok(stopNames.length > 0);
    const stops = interpret(fwd.graph, fwd.feeds, stopNames);
    const moved = (sign: 1 | -1): number => {
      const params = new Map<string, Float64Array>();
      for (const k of g.wrt) {
        const grad = f64[`grad.${k}`]!.data;
        const norm = l2Norm(grad);
        const theta = fwd.graph.initializers.get(k)!.data as Float32Array;
        params.set(k, Float64Array.from(theta, (v, j) => (norm > 0 ? v + (sign * EPS * grad[j]!) / norm : v)));
      }
      return interpret(frozen(fwd.graph, params, stops), fwd.feeds, ['loss_total']).loss_total!.data[0]!;
    };
    const predicted = g.wrt.reduce((sum, k) => sum + l2Norm(f64[`grad.${k}`]!.data), 0);
    const measured = (moved(1) - moved(-1)) / (2 * EPS);
    const rel = Math.abs(measured - predicted) / predicted;
    console.log(`# directional derivative: gradient graph ${predicted}, central difference ${measured} (${rel.toExponential(2)})`);
    assert.ok(rel <= 1e-5, `directional derivative ${measured} vs the gradients' ${predicted}`);
  });

  const ours = (name: string): Float32Array => f32[name]!.data as Float32Array;

  it('runs fewer tokens than queries (k < 300) in more than one group', () => {
    assert.equal(step.ctx.k, 16);
    assert.equal(step.ctx.groups, 2);
    assert.ok(step.targets[0]!.labels.length >= 2);
  });

  it('loss_total and every loss key within 1e-6 of float64 (the counts exactly)', () => {
    for (const name of ['loss_total', ...g.keys.map((k) => `loss.${k}`)]) {
      const exact = f64[name]!.data[0]!;
      const got = ours(name)[0]!;
      if (Number.isInteger(exact) && /error/.test(name)) assert.equal(got, exact, name);
      else assert.ok(Math.abs(got - exact) <= 1e-6 * Math.abs(exact), `${name}: ${got} vs float64 ${exact}`);
    }
  });

  it('every parameter gradient within float32 noise of float64; the key biases\' exact zeros near zero', () => {
    let l2 = 0;
    let l2Ours = 0;
    const rels: number[] = [];
    const zeros: string[] = [];
    const lines: string[] = [];
    for (const k of g.wrt) {
      const name = `grad.${k}`;
      const exact = f64[name]!.data;
      const got = ours(name);
      const norm = l2Norm(exact);
      const normOurs = l2Norm(got);
      l2 += norm ** 2;
      l2Ours += normOurs ** 2;
      if (norm < 1e-12) {
        zeros.push(k);
        lines.push(`${k}: float64 |g| ${norm.toExponential(1)}, ours ${normOurs.toExponential(1)}`);
        continue;
      }
      const rel = relL2(got, exact);
      rels.push(rel);
      if (rel > 1e-4) lines.push(`${k}: ${rel.toExponential(2)}`);
      assert.ok(rel <= 2e-3, `${name}: relative L2 ${rel.toExponential(2)} from float64`);
    }
    console.log(lines.map((l) => `# ${l}`).join('\n'));
    // Softmax over keys is invariant to a bias added to every key: those gradients are 0.
    assert.deepEqual(zeros, g.wrt.filter((k) => k.endsWith('attention.attention.key.bias')));
    for (const k of zeros) assert.ok(l2Norm(ours(`grad.${k}`)) <= 1e-9 * Math.sqrt(l2), `grad.${k} is not ~0`);
    rels.sort((a, b) => a - b);
    const p90 = rels[Math.floor(rels.length * 0.9)]!;
    console.log(`# ${rels.length} gradients: median ${rels[rels.length >> 1]!.toExponential(2)}, 90th percentile ${p90.toExponential(2)}, max ${rels[rels.length - 1]!.toExponential(2)}`);
    assert.ok(p90 <= 2e-4, `90th percentile ${p90.toExponential(2)}`);
    const globalRel = Math.abs(Math.sqrt(l2Ours) - Math.sqrt(l2)) / Math.sqrt(l2);
    console.log(`# grad_global_l2 float64 ${Math.sqrt(l2)}, ours ${Math.sqrt(l2Ours)} (${globalRel.toExponential(2)})`);
    assert.ok(globalRel <= 2e-5, `grad_global_l2 ${globalRel.toExponential(2)} from float64`);
  });
});
