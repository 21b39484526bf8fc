/**
 * What summing a broadcast operand's gradient one axis at a time (`reduceSumStaged`, for accuracy)
 * costs a training step: the yolo9t or yolox-s train graph at batch 8, 320x320 as built, against
 * the same graph with each staged ReduceSum chain merged back into one ReduceSum (the anchor), both
 * sessions run alternately in this process on the same random feeds. Prints the median step times
 * and their ratio (staged / merged; <= 1.0 is no slower).
 *
 *   node --import tsx bench/staged-sum-cost.ts [--family yolo9|yolox] [--runs 6]
 */
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import type { Graph, Node } from '../src/graph/ir.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import { yolo9Family } from '../src/models/yolo9/family.ts';
import { yoloxFamily } from '../src/models/yolox/family.ts';
import type { ModelFamily } from '../src/models/registry.ts';
import { buildTrainGraph } from '../src/train/graph.ts';
import { mulberry32 } from '../src/util/random.ts';
import { median } from './common.ts';

const { values } = parseArgs({ options: { family: { type: 'string', default: 'yolo9' }, runs: { type: 'string', default: '6' } } });
const families: Record<string, [ModelFamily, string]> = { yolo9: [yolo9Family, 't'], yolox: [yoloxFamily, 's'] };
const chosen = families[values.family!];
if (!chosen) throw new Error(`--family must be yolo9 or yolox, got ${values.family}`);
const [family, size] = chosen;
const network = family.create({ size, nc: 80 });
const staged = (await buildTrainGraph(family, network, { batch: 8, height: 320, width: 320, maxTargets: 10 })).graph;

/** The graph with every chain of ReduceSums, each feeding only the next, merged into one. */
function mergeChains(g: Graph): { graph: Graph; merged: number } {
  const out = g.clone();
  const axesOf = (v: string): number[] => Array.from(out.initializers.get(v)!.data as BigInt64Array, Number);
  const readers = new Map<string, number>();
  for (const n of out.nodes) for (const v of n.inputs) if (v) readers.set(v, (readers.get(v) ?? 0) + 1);
  const producer = new Map(out.nodes.map((n) => [n.outputs[0]!, n]));
  const gone = new Set<Node>();
  for (const r of out.nodes) {
    if (r.op !== 'ReduceSum' || !r.inputs[1]) continue;
    let axes = axesOf(r.inputs[1]);
    let p = producer.get(r.inputs[0]!);
    while (p && p.op === 'ReduceSum' && p.inputs[1] && readers.get(p.outputs[0]!) === 1 && !gone.has(p)) {
      axes = [...axesOf(p.inputs[1]), ...axes];
      gone.add(p);
      r.inputs[0] = p.inputs[0]!;
      p = producer.get(r.inputs[0]!);
    }
    if (axes.length > 1) {
      const name = `${r.name}_merged_axes`;
      out.initializers.set(name, { dtype: 'int64', dims: [axes.length], data: BigInt64Array.from(axes.map(BigInt)) });
      r.inputs[1] = name;
    }
  }
  out.nodes = out.nodes.filter((n) => !gone.has(n));
  return { graph: out, merged: gone.size };
}

const { graph: merged, merged: count } = mergeChains(staged);
const rand = mulberry32(1);
const feeds: Record<string, ort.Tensor> = {};
for (const v of staged.inputs) {
  const dims = v.shape.map(Number);
  const n = dims.reduce((p, q) => p * q, 1);
  feeds[v.name] = v.dtype === 'int64' ? new ort.Tensor('int64', new BigInt64Array(n), dims) : new ort.Tensor('float32', Float32Array.from({ length: n }, () => (rand() - 0.5) * 0.2), dims);
}
const opts: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 2, logSeverityLevel: 3 };
const sessions = { staged: await ort.InferenceSession.create(serializeModel(staged), opts), merged: await ort.InferenceSession.create(serializeModel(merged), opts) };
const times: Record<keyof typeof sessions, number[]> = { staged: [], merged: [] };
for (let k = 0; k <= Number(values.runs); k++) {
  for (const which of (k % 2 ? ['staged', 'merged'] : ['merged', 'staged']) as Array<keyof typeof sessions>) {
    const t0 = performance.now();
    await sessions[which].run(feeds);
    if (k > 0) times[which].push(performance.now() - t0); // the first round warms up
  }
}
const s = median(times.staged);
const m = median(times.merged);
console.log(`${values.family} train step b8 320: staged ${s.toFixed(0)} ms, merged anchor ${m.toFixed(0)} ms (${count} ReduceSums merged away); ratio ${(s / m).toFixed(3)}`);
