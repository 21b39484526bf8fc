/**
 * Live bytes of a yolo9 training graph over the order ONNX Runtime executes it in, against the
 * graph's own node order. ORT's sequential executor runs the nodes of its GraphViewer in
 * `ExecutionOrder::DEFAULT`: a depth-first walk from the leaf nodes (nodes no other node reads),
 * emitting a node once all its producers are emitted; the leaves start on a stack in node-index
 * order (so the last leaf is walked first) and a node's producers are pushed in ascending index
 * order (so its highest-index producer is walked first). This file reproduces that walk over the
 * graph as built (node index = position; ORT's optimiser renumbers the nodes it replaces, so the
 * measured order is checked against a profile with `--profile`).
 *
 *   node --import tsx bench/ort-order.ts [--size c] [--imgsz 320] [--batch 1] [--top 12]
 */
import { parseArgs } from 'node:util';
import { isBackwardNode } from '../src/graph/autodiff/saved.ts';
import { ortExecutionOrder, liveness } from '../src/graph/passes/exec-order.ts';
import { sizedYolo9TrainGraph } from './train-graph-bytes.ts';

const { values } = parseArgs({ options: {
  size: { type: 'string', default: 'c' }, imgsz: { type: 'string', default: '320' }, batch: { type: 'string', default: '1' },
  top: { type: 'string', default: '12' },
} });
const imgsz = Number(values.imgsz);
const batch = Number(values.batch);
const { train: tg, bytes } = await sizedYolo9TrainGraph(values.size!, imgsz, batch);
const g = tg.graph;
const mb = (x: number): string => (x / 2 ** 20).toFixed(1);
const producerOp = new Map<string, { op: string; backward: boolean }>();
for (const n of g.nodes) for (const o of n.outputs) if (o) producerOp.set(o, { op: n.op, backward: isBackwardNode(n) });

const report = (label: string, order: number[]): void => {
  const r = liveness(g, order, bytes);
  const at = g.nodes[order[r.peakAt]!]!;
  console.log(`${label}: peak live ${mb(r.peak)} MiB (${mb(r.peak / batch)} MiB per image) at step ${r.peakAt} ${at.op} ${at.name}`);
  const groups = new Map<string, { count: number; bytes: number }>();
  for (const [v, b] of r.peakSet) {
    const p = producerOp.get(v);
    const key = !p ? 'input' : `${p.backward ? 'backward' : 'forward'} ${p.op}`;
    const e = groups.get(key) ?? { count: 0, bytes: 0 };
    e.count++; e.bytes += b; groups.set(key, e);
  }
  for (const [k, e] of [...groups].sort((a, c) => c[1].bytes - a[1].bytes).slice(0, Number(values.top))) console.log(`  ${k.padEnd(32)} ${String(e.count).padStart(5)} ${mb(e.bytes).padStart(9)} MiB`);
  console.log('  largest values alive at the peak:');
  for (const [v, b] of [...r.peakSet].sort((a, c) => c[1] - a[1]).slice(0, Number(values.top))) console.log(`    ${mb(b).padStart(7)} MiB  ${producerOp.get(v)?.op ?? 'input'}  ${v.slice(0, 110)}`);
};

console.log(`yolo9${values.size} b${batch} ${imgsz}: ${g.nodes.length} nodes`);
report('graph order', g.nodes.map((_, k) => k));
report("ORT's default order (reverse DFS from the leaves)", ortExecutionOrder(g));
