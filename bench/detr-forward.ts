/**
 * DETR forwards against their anchors, in one process, runs interleaved pair by pair so machine
 * noise hits both sides alike (ratio = ours / anchor, <= 0.8 is the goal of issue 25):
 *
 *   rfdetr-n b1 384   our predict graph (the default, fused contrib kernels) vs the original's torch
 *                     export of the same weights, given with --rfdetr-export (107 MB, not shipped:
 *                     made by hand as docs/detr-performance.md says); without it, vs the plain ONNX
 *                     decomposition of the same weights with ORT's full optimisation level
 *   dfine-n  b1 640   our predict graph vs the original's torch export dfinen_ref.onnx
 *   deim-n   b1 640   our predict graph vs the original's torch export deimn_ref.onnx
 *   dfine-n  b4 640   our predict graph at batch 4 vs 4x dfinen_ref.onnx at batch 1 (the original's
 *                     export has a static batch of 1)
 *
 * Both sides run through the same engine (a session worker, ORT graph optimisation 'all', the same
 * threads, idle threads sleeping). Per line: the median wall time of each side, the ratio of the
 * medians, the median of the per-pair ratios (steadier on a shared machine) and the ratio of the
 * median process CPU times (every thread). The load average is printed before and after.
 *
 *   node --import tsx bench/detr-forward.ts [--rounds 15] [--threads 2] [--only rfdetr,dfine,deim,dfine-b4] [--rfdetr-export rfdetrn_torch.onnx]
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { LibreYOLO, type LibreYOLOModel } from '../src/index.ts';
import { loadImageFile } from '../src/data/image.ts';
import { resizePilBilinear } from '../src/data/pil-resize.ts';
import { GraphBuilder } from '../src/graph/builder.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import type { HostTensor } from '../src/graph/tensor.ts';
import { RFDETR_CONFIGS } from '../src/models/rfdetr/config.ts';
import type { RfdetrNetwork } from '../src/models/rfdetr/network.ts';
import { parseDevice } from '../src/runtime/device.ts';
import { OnnxFileEngine } from '../src/runtime/graph-engine.ts';
import { median } from './common.ts';

const { values } = parseArgs({ options: {
  rounds: { type: 'string', default: '15' },
  threads: { type: 'string', default: String(cpus().length) },
  only: { type: 'string', default: 'rfdetr,dfine,deim,dfine-b4' },
  'rfdetr-export': { type: 'string' },
} });
const rounds = Number(values.rounds);
const threads = Number(values.threads);
const only = new Set(values.only.split(','));
const fixtures = resolve(import.meta.dirname, '../../shared/fixtures');
const device = parseDevice('cpu');
const photo = await loadImageFile(resolve(import.meta.dirname, '../test/assets/parkour.jpg'));

/** The photo stretched to s x s (Pillow bilinear), /255, repeated `batch` times; mean/std do not change timing. */
function input(s: number, batch: number): HostTensor {
  const resized = resizePilBilinear(photo, s, s);
  const plane = s * s;
  const data = new Float32Array(batch * 3 * plane);
  for (let c = 0; c < 3; c++) for (let k = 0; k < plane; k++) data[c * plane + k] = resized.data[k * 3 + c]! / 255;
  for (let n = 1; n < batch; n++) data.copyWithin(n * 3 * plane, 0, 3 * plane);
  return { dtype: 'float32', dims: [batch, 3, s, s], data };
}

interface Pair {
  label: string;
  ours: () => Promise<unknown>;
  anchor: () => Promise<unknown>;
  /** The anchor's time is multiplied by this (4 for batch 4 against a batch-1 anchor). */
  anchorRuns: number;
}

const models: LibreYOLOModel[] = [];
const engines: OnnxFileEngine[] = [];
const pairs: Pair[] = [];

if (only.has('rfdetr')) {
  const s = RFDETR_CONFIGS.n.resolution;
  const model = await LibreYOLO(resolve(fixtures, 'rfdetrn_ref.pt'), { threads });
  const torchExport = values['rfdetr-export'];
  let anchor: OnnxFileEngine;
  if (torchExport) anchor = new OnnxFileEngine(new Uint8Array(readFileSync(torchExport)), 'float32', false, { device, threads });
  else {
    const b = new GraphBuilder('rfdetr');
    (model.network as RfdetrNetwork).emitExport(b, { batch: 1, height: s, width: s, fused: false });
    anchor = new OnnxFileEngine(serializeModel(b.graph), 'float32', false, { device, threads });
  }
  const x = input(s, 1);
  models.push(model);
  engines.push(anchor);
  const what = torchExport ? 'the original\'s torch export' : 'plain decomposition, ORT opt all';
  pairs.push({ label: `rfdetr-n b1 ${s} (anchor: ${what})`, ours: () => model.forward(x), anchor: () => anchor.forwardRaw(x), anchorRuns: 1 });
}
for (const [name, batch] of [['dfine', 1], ['deim', 1], ['dfine-b4', 4]] as const) {
  if (!only.has(name)) continue;
  const file = name === 'deim' ? 'deimn' : 'dfinen';
  const model = await LibreYOLO(resolve(fixtures, `${file}_ref.pt`), { threads });
  const ref = new OnnxFileEngine(new Uint8Array(readFileSync(resolve(fixtures, `${file}_ref.onnx`))), 'float32', false, { device, threads });
  const x = input(640, batch);
  const x1 = input(640, 1);
  models.push(model);
  engines.push(ref);
  pairs.push({ label: `${file.slice(0, -1)}-n b${batch} 640 (anchor: ${file}_ref.onnx b1${batch > 1 ? ` x${batch}` : ''})`, ours: () => model.forward(x), anchor: () => ref.forwardRaw(x1), anchorRuns: batch });
}

/** Wall and process CPU ms of one call. */
async function timed(f: () => Promise<unknown>): Promise<{ wall: number; cpu: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await f();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000 };
}

for (const p of pairs) for (let k = 0; k < 2; k++) { await p.ours(); await p.anchor(); } // sessions created and warm
const load0 = loadavg();
const rows = pairs.map(() => ({ ours: [] as number[], anchor: [] as number[], oursCpu: [] as number[], anchorCpu: [] as number[] }));
for (let r = 0; r < rounds; r++) {
  for (const [i, p] of pairs.entries()) {
    const row = rows[i]!;
    let anchorWall = 0;
    let anchorCpu = 0;
    const anchor = async (): Promise<void> => {
      for (let k = 0; k < p.anchorRuns; k++) {
        const t = await timed(p.anchor);
        anchorWall += t.wall;
        anchorCpu += t.cpu;
      }
    };
    const ours = async (): Promise<void> => {
      const t = await timed(p.ours);
      row.ours.push(t.wall);
      row.oursCpu.push(t.cpu);
    };
    // Alternate which side runs first so neither always gets the warmer cache.
    if (r % 2) { await anchor(); await ours(); } else { await ours(); await anchor(); }
    row.anchor.push(anchorWall);
    row.anchorCpu.push(anchorCpu);
  }
}
const load1 = loadavg();
console.log(`threads=${threads}, ${rounds} interleaved rounds; load average ${load0.map((l) => l.toFixed(2)).join(' ')} before, ${load1.map((l) => l.toFixed(2)).join(' ')} after (${cpus().length} cores)`);
for (const [i, p] of pairs.entries()) {
  const row = rows[i]!;
  const o = median(row.ours);
  const a = median(row.anchor);
  const pair = median(row.ours.map((t, k) => t / row.anchor[k]!));
  const cpu = median(row.oursCpu) / median(row.anchorCpu);
  console.log(`${p.label}: ours ${o.toFixed(1)} ms, anchor ${a.toFixed(1)} ms, ratio of medians ${(o / a).toFixed(3)}, median per-pair ratio ${pair.toFixed(3)}, CPU-time ratio ${cpu.toFixed(3)}`);
}
for (const m of models) await m.close();
for (const e of engines) await e.close();
