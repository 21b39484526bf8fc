/**
 * Time per op kind of the float64 interpreter on RF-DETR-n's train graph (forward + loss +
 * backward; the fixture step, batch 2 at 384, or a smaller one on its images), over its first
 * --nodes nodes (default all).
 *
 *   node --import tsx bench/interp-profile.ts [--nodes 400] [--size 96 --batch 1 --groups 2]
 */
import { parseArgs } from 'node:util';
import { Graph } from '../src/graph/ir.ts';
import { interpret } from '../src/graph/interpret/interpreter.ts';
import { KERNELS } from '../src/graph/interpret/kernels.ts';
import { rfdetrFixtureStep, rfdetrTrainGraph } from '../test/helpers/rfdetr-train-graph.ts';

const { values: args } = parseArgs({ options: { nodes: { type: 'string' }, size: { type: 'string', default: '384' }, batch: { type: 'string', default: '2' }, groups: { type: 'string', default: '13' } } });
const opts = { size: Number(args.size), batch: Number(args.batch), groups: Number(args.groups) };
const step = await rfdetrFixtureStep(opts);
const g = await rfdetrTrainGraph(step, { gradients: true, groups: opts.groups });
const count = Math.min(Number(args.nodes ?? Infinity), g.graph.nodes.length);
const head = new Graph('head');
head.nodes = g.graph.nodes.slice(0, count);
head.inputs = g.graph.inputs;
head.initializers = g.graph.initializers;
const time = new Map<string, { ms: number; n: number }>();
const slowest: Array<{ ms: number; what: string }> = [];
for (const [op, k] of Object.entries(KERNELS)) {
  KERNELS[op] = (inputs, node) => {
    const t = performance.now();
    const r = k(inputs, node);
    const e = time.get(op) ?? { ms: 0, n: 0 };
    const ms = performance.now() - t;
    e.ms += ms;
    slowest.push({ ms, what: `${op} ${node.name} ${inputs.map((x) => `[${x?.dims.join(',') ?? ''}]`).join(' ')}` });
    slowest.sort((a, b) => b.ms - a.ms).splice(12);
    e.n++;
    time.set(op, e);
    return r;
  };
}
const t0 = performance.now();
interpret(head, g.feeds, []);
const total = performance.now() - t0;
console.log(`${count} of ${g.graph.nodes.length} nodes in ${(total / 1000).toFixed(1)} s`);
for (const [op, { ms, n }] of [...time].sort((a, b) => b[1].ms - a[1].ms)) console.log(`${op.padEnd(20)} ${n.toString().padStart(5)} ${(ms / 1000).toFixed(2).padStart(8)} s`);
console.log('\nslowest nodes:');
for (const { ms, what } of slowest) console.log(`${(ms / 1000).toFixed(2).padStart(6)} s ${what}`);
