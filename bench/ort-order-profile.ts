/**
 * What ONNX Runtime really holds during a yolo9 train step: one profiled step of the train graph in
 * this process (one intra-op thread, memory pattern off as train sessions have it), ORT's optimised
 * graph saved beside it as ONNX, then the live bytes over the node sequence the profile shows,
 * against the optimised graph's edges, with each value's size from the profile's output shapes.
 * It prints the peak, where it falls and what is alive there, and checks the profile's sequence
 * against src/graph/passes/exec-order.ts's reproduction of ORT's default order on the saved graph.
 *
 * The profile's `mem_bytes_requested_in_use` after each node is ORT's arena accounting, printed
 * beside the model: where they part, ORT holds buffers the order does not explain.
 *
 *   node --import tsx bench/ort-order-profile.ts [--size c] [--imgsz 320] [--batch 1] [--opt-level all] [--shaped] [--out /tmp/ort-order] [--top 15] [--jumps 20] [--reuse]
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { yolo9Family } from '../src/models/yolo9/family.ts';
import { buildTrainGraph, parameterFeeds } from '../src/train/graph.ts';
import { deserializeModel, serializeModel } from '../src/graph/onnx.ts';
import { liveness, ortExecutionOrder } from '../src/graph/passes/exec-order.ts';
import { findOrtFile } from '../src/runtime/ort-profile-file.ts';
import { reorderOptimizedModel } from '../src/runtime/optimized-model-cache.ts';
import { zeros, type HostTensor } from '../src/graph/tensor.ts';
import { noiseTrainBatch } from './noise-batch.ts';

const { values } = parseArgs({ options: {
  size: { type: 'string', default: 'c' }, imgsz: { type: 'string', default: '320' }, batch: { type: 'string', default: '1' },
  'opt-level': { type: 'string', default: 'all' }, out: { type: 'string', default: '/tmp/ort-order' }, top: { type: 'string', default: '15' },
  // Read the profile and optimised model an earlier run left in --out instead of running a step.
  reuse: { type: 'boolean', default: false },
  // Print the first N steps where ORT's arena departs from the model.
  jumps: { type: 'string', default: '0' }, 'min-jump': { type: 'string', default: '1048576' },
  // Every static shape declared (TrainGraphConfig.hideShapes false), as before.
  shaped: { type: 'boolean', default: false },
  // As train steps open their sessions: ORT's optimised graph saved, reordered like the graph as
  // built (optimized-model-cache.ts reorderOptimizedModel) and opened with optimisation off.
  reorder: { type: 'boolean', default: false },
} });
const imgsz = Number(values.imgsz);
const batch = Number(values.batch);
const out = values.out!;
mkdirSync(out, { recursive: true });
const tag = `yolo9${values.size}_b${batch}_${imgsz}_${values['opt-level']}${values.shaped ? '_shaped' : ''}${values.reorder ? '_reordered' : ''}`;
const optPath = join(out, `${tag}.onnx`);
const prefix = join(out, tag);

if (!values.reuse) {
  const network = yolo9Family.create({ size: values.size!, nc: 80 });
  const tg = await buildTrainGraph(yolo9Family, network, { batch, height: imgsz, width: imgsz, maxTargets: 100, hideShapes: values.shaped !== true });
  let model = serializeModel(tg.graph);
  let level = values['opt-level'] as 'all' | 'disabled';
  if (values.reorder) {
    const first = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, graphOptimizationLevel: level, enableMemPattern: false, optimizedModelFilePath: optPath, logSeverityLevel: 3 });
    await first.release();
    model = reorderOptimizedModel(readFileSync(optPath), tg.graph);
    level = 'disabled';
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: level,
    enableMemPattern: false, enableProfiling: true, profileFilePrefix: prefix, optimizedModelFilePath: optPath,
    logSeverityLevel: 3,
  });
  const noise = noiseTrainBatch(1, batch, imgsz, 100);
  const host: Record<string, HostTensor> = { ...parameterFeeds(network, [...tg.parameters, ...tg.buffers]), images: noise.images, targets: noise.targets };
  const feeds: Record<string, ort.Tensor> = {};
  for (const v of tg.graph.inputs) {
    const t = host[v.name] ?? zeros(v.dtype, v.shape.map(Number));
    feeds[v.name] = new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
  }
  await session.run(feeds);
  session.endProfiling();
  await session.release();
}

interface ProfileEvent { cat: string; name: string; ts: number; args?: { op_name?: string; node_index?: string; output_type_shape?: Array<Record<string, number[]>> } }
const file = await findOrtFile(prefix);
if (!file) throw new Error(`no profile for ${prefix}`);
const events = JSON.parse(readFileSync(file, 'utf8')) as ProfileEvent[];
// The session's run: the last step's node events, in order. Events of the session's own
// initialisation have no kernel_time suffix.
const nodeEvents = events.filter((e) => e.cat === 'Node' && e.name.endsWith('_kernel_time')).sort((a, b) => a.ts - b.ts);
const g = deserializeModel(readFileSync(optPath));
const byName = new Map(g.nodes.map((n, k) => [n.name, k]));
const ran: number[] = [];
const sizes = new Map<string, number>();
const bytesOf: Record<string, number> = { float: 4, double: 8, int64: 8, int32: 4, bool: 1, uint8: 1, int8: 1, float16: 2 };
let unmatched = 0;
for (const e of nodeEvents) {
  const name = e.name.slice(0, -'_kernel_time'.length);
  const k = byName.get(name);
  if (k === undefined) { unmatched++; continue; }
  ran.push(k);
  const n = g.nodes[k]!;
  (e.args?.output_type_shape ?? []).forEach((ts, j) => {
    const [type, dims] = Object.entries(ts)[0] ?? ['float', []];
    const o = n.outputs[j];
    if (o) sizes.set(o, (bytesOf[type] ?? 4) * (dims as number[]).reduce((a, d) => a * d, 1));
  });
}
const mb = (x: number): string => (x / 2 ** 20).toFixed(1);
console.log(`${tag}: optimised graph ${g.nodes.length} nodes, profile ${nodeEvents.length} node runs (${unmatched} not matched by name)`);
const predicted = ortExecutionOrder(g);
let same = 0;
for (let k = 0; k < Math.min(predicted.length, ran.length); k++) if (predicted[k] === ran[k]) same++;
console.log(`reverse-DFS order over the saved graph: ${same} of ${ran.length} positions match the profile (the saved graph's node indices are not the session's)`);

const producer = new Map<string, number>();
g.nodes.forEach((n, k) => { for (const o of n.outputs) if (o) producer.set(o, k); });
const r = liveness(g, ran, (v) => sizes.get(v) ?? 0);
const at = g.nodes[ran[r.peakAt]!]!;
console.log(`peak live over the executed order: ${mb(r.peak)} MiB at step ${r.peakAt} of ${ran.length} (${at.op} ${at.name})`);
const kind = (v: string): string => {
  const p = producer.get(v);
  if (p === undefined) return 'input';
  const n = g.nodes[p]!;
  return `${n.name.startsWith('/backward') ? 'backward' : 'forward'} ${n.op}`;
};
const groups = new Map<string, { count: number; bytes: number }>();
for (const [v, b] of r.peakSet) {
  const e = groups.get(kind(v)) ?? { count: 0, bytes: 0 };
  e.count++; e.bytes += b; groups.set(kind(v), e);
}
for (const [k, e] of [...groups].sort((a, c) => c[1].bytes - a[1].bytes).slice(0, Number(values.top))) console.log(`  ${k.padEnd(36)} ${String(e.count).padStart(5)} ${mb(e.bytes).padStart(9)} MiB`);
// For each value alive at the peak: when it was made and which reader keeps it.
const posOf = new Map<number, number>();
ran.forEach((k, pos) => posOf.set(k, pos));
const readers = new Map<string, number[]>();
g.nodes.forEach((n, k) => { for (const v of n.inputs) if (v) (readers.get(v) ?? readers.set(v, []).get(v)!).push(k); });
console.log('  largest values alive at the peak (made at step, last reader at step: node):');
for (const [v, b] of [...r.peakSet].sort((a, c) => c[1] - a[1]).slice(0, Number(values.top))) {
  const made = posOf.get(producer.get(v) ?? -1) ?? -1;
  const last = (readers.get(v) ?? []).map((k) => [posOf.get(k) ?? -1, k] as const).sort((a, c) => c[0] - a[0])[0];
  console.log(`    ${mb(b).padStart(7)} MiB  ${kind(v).padEnd(24)} made ${made}, last read ${last?.[0] ?? '-'}: ${last ? g.nodes[last[1]]!.name.slice(0, 70) : 'output'}  (${v.slice(0, 60)})`);
}

// ORT's own arena accounting after each node (bytes requested and in use) against the model above.
const arena = nodeEvents.filter((e) => byName.has(e.name.slice(0, -'_kernel_time'.length))).map((e) => Number((e.args as Record<string, string>).mem_bytes_requested_in_use ?? 0));
let ap = 0;
arena.forEach((v, k) => { if (v > arena[ap]!) ap = k; });
console.log(`ORT arena, bytes requested in use: peak ${mb(arena[ap]!)} MiB at step ${ap} (${g.nodes[ran[ap]!]!.name}); the model there: ${mb(r.after[ap]!)} MiB`);
for (let k = 0; k < ran.length; k += Math.ceil(ran.length / 30)) console.log(`  step ${String(k).padStart(6)}  arena ${mb(arena[k]!).padStart(7)}  model ${mb(r.after[k]!).padStart(7)}  ${g.nodes[ran[k]!]!.name.slice(0, 80)}`);

// Where ORT's arena departs from the model: steps where (arena - model) moves by more than
// --min-jump bytes, i.e. a buffer ORT keeps after its value's last reader (or hands a new value
// without allocating).
const jumps = Number(values.jumps);
let shown = 0;
for (let pos = 1; pos < ran.length && shown < jumps; pos++) {
  // The arena is sampled after a node's kernel, before that node's dead inputs are released: the
  // model's matching figure is the live bytes before the frees (`curve`).
  const d = arena[pos]! - r.curve[pos]!;
  const prev = arena[pos - 1]! - r.curve[pos - 1]!;
  if (Math.abs(d - prev) <= Number(values['min-jump'])) continue;
  shown++;
  const n = g.nodes[ran[pos]!]!;
  const kb = (x: number): string => `${(x / 1024).toFixed(0)}k`;
  console.log(`  step ${pos}: arena - model ${d - prev > 0 ? '+' : ''}${kb(d - prev)} (now ${kb(d)}) at ${n.op} ${n.name} in[${n.inputs.map((v) => `${v}:${kb(sizes.get(v) ?? 0)}`).join(', ')}]`);
}
