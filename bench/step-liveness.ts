/**
 * Live bytes of a yolo9 training graph over its node order, as an allocator that frees each value
 * after its last reader would see them: the peak, where it falls, and what is alive there (forward
 * values kept for the backward, by op; backward temporaries, by op). No step runs; ORT only infers
 * the shapes. ORT executes in its own order after fusing, so this is the graph's floor, not ORT's
 * figure.
 *
 *   node --import tsx bench/step-liveness.ts [--size t] [--imgsz 320] [--batch 1] [--keep-activations] [--top 12]
 */
import { parseArgs } from 'node:util';
import { isBackwardNode } from '../src/graph/autodiff/saved.ts';
import { sizedYolo9TrainGraph } from './train-graph-bytes.ts';

const { values } = parseArgs({ options: {
  size: { type: 'string', default: 't' }, imgsz: { type: 'string', default: '320' }, batch: { type: 'string', default: '1' },
  'keep-activations': { type: 'boolean', default: false }, top: { type: 'string', default: '12' },
} });
const imgsz = Number(values.imgsz);
const batch = Number(values.batch);
const { train: tg, bytes } = await sizedYolo9TrainGraph(values.size!, imgsz, batch, values['keep-activations'] !== true);
const g = tg.graph;
const outputs = new Set(g.outputs.map((o) => o.name));
const lastUse = new Map<string, number>();
g.nodes.forEach((n, k) => { for (const v of n.inputs) if (v) lastUse.set(v, k); });
const producer = new Map<string, { op: string; backward: boolean; k: number }>();
g.nodes.forEach((n, k) => { for (const o of n.outputs) if (o) producer.set(o, { op: n.op, backward: isBackwardNode(n), k }); });

const live = new Map<string, number>();
let cur = 0, peak = 0, peakAt = -1;
let peakSet: Array<[string, number]> = [];
let turn = -1;
g.nodes.forEach((n, k) => {
  if (turn < 0 && isBackwardNode(n)) turn = k;
  for (const o of n.outputs) if (o && !live.has(o)) { const b = bytes(o); live.set(o, b); cur += b; }
  if (cur > peak) { peak = cur; peakAt = k; peakSet = [...live]; }
  for (const v of new Set([...n.inputs, ...n.outputs])) {
    if (!v || !live.has(v) || outputs.has(v)) continue;
    if ((lastUse.get(v) ?? -1) <= k) { cur -= live.get(v)!; live.delete(v); }
  }
});
const mb = (x: number): string => (x / 2 ** 20).toFixed(1);
const at = g.nodes[peakAt]!;
console.log(`yolo9${values.size} b${batch} ${imgsz}: ${g.nodes.length} nodes (backward from node ${turn}); peak live ${mb(peak)} MiB (${mb(peak / batch)} MiB per image) at node ${peakAt} ${at.op} ${at.name}`);
const groups = new Map<string, { count: number; bytes: number }>();
for (const [v, b] of peakSet) {
  const p = producer.get(v);
  const key = !p ? 'input' : `${p.backward ? 'backward' : 'forward'} ${p.op}`;
  const e = groups.get(key) ?? { count: 0, bytes: 0 };
  e.count++; e.bytes += b; groups.set(key, e);
}
for (const [k, e] of [...groups].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, Number(values.top))) console.log(`  ${k.padEnd(32)} ${String(e.count).padStart(5)} ${mb(e.bytes).padStart(9)} MiB`);
console.log('  largest values alive at the peak:');
for (const [v, b] of peakSet.sort((a, c) => c[1] - a[1]).slice(0, Number(values.top))) console.log(`    ${mb(b).padStart(7)} MiB  ${producer.get(v)?.op ?? 'input'}  ${v.slice(0, 110)}`);
