/**
 * How far RF-DETR-n's float32 gradients on the original's train step (rfdetrn_ref_train, batch 2
 * at 384) lie from exact arithmetic: the test's forward + loss + backward graph
 * (test/helpers/rfdetr-train-graph.ts) in the float64 interpreter, against the reference's stored
 * grad.* and grad_global_l2 and against ours (the same graph on ONNX Runtime). Prints, per
 * gradient, both relative L2 distances from float64 and ours / reference.
 *
 *   nice -n 10 node --import tsx bench/rfdetr-grad-f64.ts [--f64-dir DIR] > out.txt
 *
 * The float64 step takes 3.7 minutes alone on 2 cores (10 with other jobs); with --f64-dir it is saved there and read back.
 */
import { parseArgs } from 'node:util';
import { interpret } from '../src/graph/interpret/interpreter.ts';
import { relL2 } from '../test/helpers/compare.ts';
import { rfdetrFixtureStep, rfdetrTrainGraph, runGraph } from '../test/helpers/rfdetr-train-graph.ts';
import { cachedArrays } from './f64-cache.ts';

const { values: args } = parseArgs({ options: { 'f64-dir': { type: 'string' } } });
const t0 = Date.now();
const log = (m: string): void => console.log(`[${((Date.now() - t0) / 1000).toFixed(0)} s] ${m}`);

const step = await rfdetrFixtureStep();
const g = await rfdetrTrainGraph(step, { gradients: true });
const wanted = ['loss_total', ...g.wrt.map((k) => `grad.${k}`)];
log(`graph built: ${g.graph.nodes.length} nodes, ${g.wrt.length} parameters`);
const f32 = await runGraph(g.graph, g.feeds);
log('float32 step (ONNX Runtime)');
let next = 0;
const exact = cachedArrays(args['f64-dir'], 'rfdetrn-f64-step', () => {
  const out = interpret(g.graph, g.feeds, wanted, {
    onNode: (done, total) => {
      if (done < next) return;
      next += 500;
      log(`float64: ${done} of ${total} nodes`);
    },
  });
  return Object.fromEntries(wanted.map((k) => [k, out[k]!.data]));
});
log('float64 step (interpreter)');

const stored = (k: string): Float32Array => step.train.get(k)!.data as Float32Array;
const ours = (k: string): Float32Array => f32[k]!.data as Float32Array;
const row = (name: string, ref: number, our: number): string => `${name} | ${ref.toExponential(2)} | ${our.toExponential(2)} | ${(our / ref).toFixed(2)}`;
const rel = (v: number, e: number): number => Math.abs(v - e) / Math.abs(e);

console.log('\nrelative distance from the float64 step: gradient | reference | ours | ours / reference');
for (const k of step.train.keys()) {
  if (!k.startsWith('grad.') || k === 'grad_global_l2') continue;
  console.log(row(k, relL2(stored(k), exact[k]!), relL2(ours(k), exact[k]!)));
}
const l2 = (get: (k: string) => ArrayLike<number>): number => Math.sqrt(g.wrt.reduce((s, p) => s + Array.from(get(`grad.${p}`), (v) => v * v).reduce((a, b) => a + b, 0), 0));
const exactL2 = l2((k) => exact[k]!);
console.log(row('grad_global_l2', rel(stored('grad_global_l2')[0]!, exactL2), rel(l2(ours), exactL2)));
console.log(row('loss_total', rel(stored('loss_total')[0]!, exact.loss_total![0]!), rel(ours('loss_total')[0]!, exact.loss_total![0]!)));
console.log(`\nfloat64: grad_global_l2 ${exactL2}, loss_total ${exact.loss_total![0]}; reference ${stored('grad_global_l2')[0]}, ${stored('loss_total')[0]}; ours ${l2(ours)}, ${ours('loss_total')[0]}`);
console.log('\nall parameters, ours from float64 (relative L2), the ten furthest:');
const far = g.wrt.map((p) => [p, relL2(ours(`grad.${p}`), exact[`grad.${p}`]!)] as const).sort((a, b) => b[1] - a[1]).slice(0, 10);
for (const [p, r] of far) console.log(`${p} ${r.toExponential(2)}`);
