/**
 * RF-DETR forward: the graph on ORT's fused contrib kernels (Attention, MultiHeadAttention,
 * SkipLayerNormalization, BiasGelu) against the plain ONNX decomposition of the same network and
 * weights (rfdetrn_ref.pt), batch 1 at 384, same threads, runs interleaved in one process; ratio =
 * fused / plain. Also prints the largest output difference between the two graphs.
 *
 *   node --import tsx bench/rfdetr-fused.ts [--runs 20] [--threads 2] [--size n]
 */
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../src/graph/builder.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import { RFDETR_CONFIGS, type RfdetrSize } from '../src/models/rfdetr/config.ts';
import { RfdetrNetwork } from '../src/models/rfdetr/network.ts';
import { loadRfdetrStateDict } from '../src/models/rfdetr/state-dict.ts';
import { loadCheckpointFile } from '../src/weights/checkpoint.ts';

const { values } = parseArgs({ options: {
  runs: { type: 'string', default: '20' }, threads: { type: 'string', default: String(cpus().length) }, size: { type: 'string', default: 'n' },
} });
const runs = Number(values.runs);
const threads = Number(values.threads);
const size = values.size as RfdetrSize;
const s = RFDETR_CONFIGS[size].resolution;

const net = new RfdetrNetwork({ size, nc: 80 });
if (size === 'n') {
  loadRfdetrStateDict(net, (await loadCheckpointFile(resolve(import.meta.dirname, '../../shared/fixtures/rfdetrn_ref.pt'))).stateDict, { peGrid: RFDETR_CONFIGS.n.peGrid });
} else {
  // Other sizes: deterministic pseudo-random weights (timing does not depend on their values).
  let seed = 1;
  for (const [, p] of net.namedTensors()) {
    const d = p.value.data as Float32Array;
    for (let k = 0; k < d.length; k++) d[k] = ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 - 0.5) * 0.05;
  }
}

async function session(fused: boolean): Promise<ort.InferenceSession> {
  const b = new GraphBuilder('rfdetr');
  net.emitExport(b, { batch: 1, height: s, width: s, fused });
  return ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: threads, graphOptimizationLevel: 'all' });
}
const sessions = { plain: await session(false), fused: await session(true) };
let rng = 7;
const x = new Float32Array(3 * s * s).map(() => ((rng = (rng * 48271) % 2147483647) / 2147483647 - 0.5) * 4);
const feed = { input: new ort.Tensor('float32', x, [1, 3, s, s]) };

const outs: Record<string, Record<string, ort.Tensor>> = {};
for (const k of ['plain', 'fused'] as const) for (let w = 0; w < 2; w++) outs[k] = await sessions[k].run(feed);
const maxDiff = (name: string): number => {
  const a = outs.plain![name]!.data as Float32Array;
  const c = outs.fused![name]!.data as Float32Array;
  let m = 0;
  for (let k = 0; k < a.length; k++) m = Math.max(m, Math.abs(a[k]! - c[k]!));
  return m;
};

const times: Record<'plain' | 'fused', number[]> = { plain: [], fused: [] };
for (let r = 0; r < runs; r++) {
  for (const k of r % 2 ? (['fused', 'plain'] as const) : (['plain', 'fused'] as const)) {
    const t0 = performance.now();
    await sessions[k].run(feed);
    times[k].push(performance.now() - t0);
  }
}
const median = (xs: number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) >> 1]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};
const p = median(times.plain);
const f = median(times.fused);
console.log(`forward rfdetr-${size} b1 ${s} threads=${threads}: fused ${f.toFixed(1)} ms, plain ${p.toFixed(1)} ms, ratio ${(f / p).toFixed(3)} (fused / plain; ${runs} interleaved runs); max |fused - plain| logits ${maxDiff('labels').toExponential(2)}, boxes ${maxDiff('dets').toExponential(2)}`);
await sessions.plain.release();
await sessions.fused.release();
