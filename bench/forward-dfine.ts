/**
 * D-FINE-n forward benchmark: median forward time of the package's own graph for dfinen_ref.pt and
 * of the original's torch export dfinen_ref.onnx (same weights), batch 1 at 640, same threads, runs
 * interleaved in one process so machine noise hits both alike; ratio = ours / reference (<= 1.0).
 *
 * The CPU time per forward (all threads) is printed beside it: on a shared machine it is steadier.
 *
 *   node --import tsx bench/forward-dfine.ts [--runs 30] [--threads 2]
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { LibreYOLO } from '../src/index.ts';
import { loadImageFile } from '../src/data/image.ts';
import { resizePilBilinear } from '../src/data/pil-resize.ts';
import { OnnxFileEngine } from '../src/runtime/graph-engine.ts';
import { parseDevice } from '../src/runtime/device.ts';
import type { HostTensor } from '../src/graph/tensor.ts';
import { median } from './common.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '30' }, threads: { type: 'string', default: String(cpus().length) } } });
const runs = Number(values.runs);
const threads = Number(values.threads);
const fixtures = resolve(import.meta.dirname, '../../shared/fixtures');

const model = await LibreYOLO(resolve(fixtures, 'dfinen_ref.pt'), { threads });
// The original's ONNX export has a static batch of 1, which is what is timed.
const reference = new OnnxFileEngine(new Uint8Array(readFileSync(resolve(fixtures, 'dfinen_ref.onnx'))), 'float32', true, { device: parseDevice('cpu'), threads });

// The photo through the family's preprocessing (Pillow stretch to 640, /255), the same input for both.
const resized = resizePilBilinear(await loadImageFile(resolve(import.meta.dirname, '../test/assets/parkour.jpg')), 640, 640);
const plane = 640 * 640;
const input = new Float32Array(3 * plane);
for (let c = 0; c < 3; c++) for (let k = 0; k < plane; k++) input[c * plane + k] = Math.fround(resized.data[k * 3 + c]! / 255);
const batch: HostTensor = { dtype: 'float32', dims: [1, 3, 640, 640], data: input };

for (let k = 0; k < 3; k++) {
  await model.forward(batch);
  await reference.forward(batch);
}
const ours: number[] = [];
const ref: number[] = [];
// Process CPU time (every thread, the session workers included) per forward: on a loaded machine
// the wall time also counts waiting for a core, the CPU time only the work.
const oursCpu: number[] = [];
const refCpu: number[] = [];
for (let k = 0; k < runs; k++) {
  for (const side of k % 2 ? ['ref', 'ours'] : ['ours', 'ref']) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    if (side === 'ours') await model.forward(batch); else await reference.forward(batch);
    (side === 'ours' ? ours : ref).push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    (side === 'ours' ? oursCpu : refCpu).push((c.user + c.system) / 1000);
  }
}
const oursMs = median(ours);
const refMs = median(ref);
// Each pair ran back to back: the median of the per-pair ratios is steadier on a shared machine.
const pairRatio = median(ours.map((t, k) => t / ref[k]!));
console.log(`forward dfinen b1 640 threads=${threads}: ours ${oursMs.toFixed(2)} ms, reference onnx ${refMs.toFixed(2)} ms, ratio ${(oursMs / refMs).toFixed(3)}, median per-pair ratio ${pairRatio.toFixed(3)} (<= 1.0 is the goal; ${runs} interleaved runs); CPU time ours ${median(oursCpu).toFixed(2)} ms, reference ${median(refCpu).toFixed(2)} ms, ratio ${(median(oursCpu) / median(refCpu)).toFixed(3)}`);

await model.close();
await reference.close();
