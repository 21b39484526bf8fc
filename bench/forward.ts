/**
 * Forward-pass benchmark. Line 1: median forward time of the package's own yolo9t graph and of the
 * original's torch-exported yolo9t_ref.onnx (same weights), batch 1 at 640, same threads, runs
 * interleaved in one process so machine noise hits both alike; ratio = ours / reference.
 * Line 2: host time per image for SAMPLE_IMAGE (decode, letterbox, postprocess, Results), median per
 * stage, as a fraction of the forward time measured in the same loop.
 *
 *   node --import tsx bench/forward.ts [--runs 30] [--threads 2]
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { LibreYOLO, SAMPLE_IMAGE } from '../src/index.ts';
import { loadImageFile } from '../src/data/image.ts';
import { letterboxInto } from '../src/data/letterbox.ts';
import { postprocessDetections } from '../src/predict/postprocess.ts';
import { Boxes, Results } from '../src/predict/results.ts';
import { OnnxFileEngine } from '../src/runtime/graph-engine.ts';
import { parseDevice } from '../src/runtime/device.ts';
import type { HostTensor } from '../src/graph/tensor.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '30' }, threads: { type: 'string', default: String(cpus().length) } } });
const runs = Number(values.runs);
const threads = Number(values.threads);
const fixtures = resolve(import.meta.dirname, '../../shared/fixtures');

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const model = await LibreYOLO(resolve(fixtures, 'yolo9t_ref.pt'), { threads });
const reference = new OnnxFileEngine(new Uint8Array(readFileSync(resolve(fixtures, 'yolo9t_ref.onnx'))), 'float32', false, { device: parseDevice('cpu'), threads });

const image = await loadImageFile(SAMPLE_IMAGE);
const input = new Float32Array(3 * 640 * 640);
const lb = letterboxInto(image, 640, input, 0);
const batch: HostTensor = { dtype: 'float32', dims: [1, 3, 640, 640], data: input };

// Warm-up creates and optimises both sessions.
for (let k = 0; k < 3; k++) {
  await model.forward(batch);
  await reference.forward(batch);
}
const ours: number[] = [];
const ref: number[] = [];
for (let k = 0; k < runs; k++) {
  // Alternate the order so neither side always runs on a warmer cache.
  for (const side of k % 2 ? ['ref', 'ours'] : ['ours', 'ref']) {
    const t0 = performance.now();
    if (side === 'ours') await model.forward(batch); else await reference.forward(batch);
    (side === 'ours' ? ours : ref).push(performance.now() - t0);
  }
}
const oursMs = median(ours);
const refMs = median(ref);
console.log(`forward yolo9t b1 640 threads=${threads}: ours ${oursMs.toFixed(1)} ms, reference onnx ${refMs.toFixed(1)} ms, ratio ${(oursMs / refMs).toFixed(3)} (<= 1.0 is the goal; ${runs} interleaved runs)`);

// Host work per image, timed on the main thread: decode, letterbox, postprocess, Results. Each host
// pass follows a forward timed in the same loop, so the fraction compares like with like even when
// the shared machine's load drifts between line 1 and here.
const output = await model.forward(batch);
const stages = { decode: [] as number[], letterbox: [] as number[], postprocess: [] as number[], host: [] as number[], forward: [] as number[] };
let boxes = 0;
for (let k = -3; k < runs; k++) { // 3 untimed passes let the JIT settle
  const f0 = performance.now();
  await model.forward(batch);
  const t0 = performance.now();
  const img = await loadImageFile(SAMPLE_IMAGE);
  const t1 = performance.now();
  const buf = new Float32Array(3 * 640 * 640);
  const info = letterboxInto(img, 640, buf, 0);
  const t2 = performance.now();
  const det = postprocessDetections(output.data as Float32Array, 0, output.dims[2]!, model.nc, {
    conf: 0.25, iou: 0.45, maxDet: 300, ratio: info.ratio, origWidth: img.width, origHeight: img.height,
  });
  const r = new Results({ boxes: new Boxes(det.xyxy, det.conf, det.cls), names: model.names, orig_shape: [img.height, img.width], path: SAMPLE_IMAGE });
  const t3 = performance.now();
  boxes = r.length;
  if (k < 0) continue;
  stages.forward.push(t0 - f0);
  stages.decode.push(t1 - t0);
  stages.letterbox.push(t2 - t1);
  stages.postprocess.push(t3 - t2);
  stages.host.push(t3 - t0);
}
let candidates = 0;
const scores = output.data as Float32Array;
for (let i = 4 * output.dims[2]!; i < scores.length; i++) if (scores[i]! > 0.25) candidates++;
const hostMs = median(stages.host);
const fwdMs = median(stages.forward);
const ms = (k: keyof typeof stages): string => median(stages[k]).toFixed(2);
console.log(`host per image ${hostMs.toFixed(2)} ms (decode ${ms('decode')}, letterbox ${ms('letterbox')}, postprocess+results ${ms('postprocess')}) = ${(hostMs / fwdMs).toFixed(3)} of forward ${fwdMs.toFixed(1)} ms (<= 0.15 is the goal; ${image.width}x${image.height} sample, ${candidates} candidates > conf, ${boxes} boxes; letterbox ratio ${lb.ratio.toFixed(3)})`);

await model.close();
await reference.close();
