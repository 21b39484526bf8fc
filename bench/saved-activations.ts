/**
 * The forward activations a yolo9 training graph keeps for its backward pass (src/graph/autodiff/saved.ts),
 * by producing op and dtype: the accounting behind docs/training-performance.md's memory table. No step
 * runs; ORT only infers the shapes.
 *
 *   node --import tsx bench/saved-activations.ts [--size t] [--imgsz 320] [--batch 1] [--keep-activations]
 */
import { parseArgs } from 'node:util';
import { yolo9Family } from '../src/models/yolo9/family.ts';
import { buildTrainGraph } from '../src/train/graph.ts';
import { probeShapes } from '../src/graph/autodiff/shapes.ts';
import { savedByKind, savedForBackward } from '../src/graph/autodiff/saved.ts';
import { zeros, type HostTensor } from '../src/graph/tensor.ts';

const { values } = parseArgs({ options: {
  size: { type: 'string', default: 't' }, imgsz: { type: 'string', default: '320' }, batch: { type: 'string', default: '1' },
  // The graph before recompute.ts: every forward value the backward reads is kept.
  'keep-activations': { type: 'boolean', default: false },
} });
const imgsz = Number(values.imgsz);
const batch = Number(values.batch);
const network = yolo9Family.create({ size: values.size!, nc: 80 });
const tg = await buildTrainGraph(yolo9Family, network, { batch, height: imgsz, width: imgsz, maxTargets: 100, recomputeCheap: values['keep-activations'] !== true, hideShapes: false });
const feeds: Record<string, HostTensor> = {};
for (const v of tg.graph.inputs) feeds[v.name] = zeros(v.dtype, v.shape.map(Number));
const shapes = await probeShapes(tg.graph, feeds);
const saved = savedForBackward(tg.graph, shapes);
const mb = (n: number): string => (n / 2 ** 20).toFixed(1);
const total = saved.reduce((s, v) => s + v.bytes, 0);
console.log(`yolo9${values.size} b${batch} ${imgsz}${values['keep-activations'] ? ' (every read value kept)' : ''}: ${tg.graph.nodes.length} nodes, ${saved.length} forward values saved for backward, ${mb(total)} MiB (${mb(total / batch)} MiB per image)`);
for (const k of savedByKind(saved)) console.log(`  ${k.kind.padEnd(28)} ${String(k.count).padStart(5)}  ${mb(k.bytes).padStart(9)} MiB`);
