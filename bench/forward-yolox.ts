/**
 * YOLOX-n forward benchmark: median forward time of the package's own graph for yoloxn_ref.pt and of
 * the original's torch export yoloxn_ref.onnx (same weights), batch 1 at 416, same threads, runs
 * interleaved in one process so machine noise hits both alike; ratio = ours / reference (<= 1.0).
 *
 *   node --import tsx bench/forward-yolox.ts [--runs 60] [--threads 2]
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { LibreYOLO } from '../src/index.ts';
import { loadImageFile } from '../src/data/image.ts';
import { yoloxPreprocess } from '../src/models/yolox/preprocess.ts';
import { OnnxFileEngine } from '../src/runtime/graph-engine.ts';
import { parseDevice } from '../src/runtime/device.ts';
import type { HostTensor } from '../src/graph/tensor.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '60' }, threads: { type: 'string', default: String(cpus().length) } } });
const runs = Number(values.runs);
const threads = Number(values.threads);
const fixtures = resolve(import.meta.dirname, '../../shared/fixtures');

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const model = await LibreYOLO(resolve(fixtures, 'yoloxn_ref.pt'), { threads });
const reference = new OnnxFileEngine(new Uint8Array(readFileSync(resolve(fixtures, 'yoloxn_ref.onnx'))), 'float32', true, { device: parseDevice('cpu'), threads });

// A real photo through the family's own preprocessing, so both sides see the same realistic input.
const plan = yoloxPreprocess(await loadImageFile(resolve(import.meta.dirname, '../test/assets/parkour.jpg')), [416, 416]);
const input = new Float32Array(3 * 416 * 416);
plan.write(input, 0);
const batch: HostTensor = { dtype: 'float32', dims: [1, 3, 416, 416], data: input };

for (let k = 0; k < 3; k++) {
  await model.forward(batch);
  await reference.forward(batch);
}
const ours: number[] = [];
const ref: number[] = [];
for (let k = 0; k < runs; k++) {
  for (const side of k % 2 ? ['ref', 'ours'] : ['ours', 'ref']) {
    const t0 = performance.now();
    if (side === 'ours') await model.forward(batch); else await reference.forward(batch);
    (side === 'ours' ? ours : ref).push(performance.now() - t0);
  }
}
const oursMs = median(ours);
const refMs = median(ref);
// On a shared machine the load drifts between runs; each pair ran back to back, so the median of the
// per-pair ratios is steadier than the ratio of the medians.
const pairRatio = median(ours.map((t, k) => t / ref[k]!));
console.log(`forward yoloxn b1 416 threads=${threads}: ours ${oursMs.toFixed(2)} ms, reference onnx ${refMs.toFixed(2)} ms, ratio ${(oursMs / refMs).toFixed(3)}, median per-pair ratio ${pairRatio.toFixed(3)} (<= 1.0 is the goal; ${runs} interleaved runs)`);

await model.close();
await reference.close();
