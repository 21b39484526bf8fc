/**
 * Training-step benchmark: images per second of one full training step of yolo9t at batch 8,
 * 320x320 on CPU, as the trainer runs it: forward + loss + backward (one ORT session), the SGD
 * update on the host, and the BatchNorm running-stat copy. Median over several steps after a
 * warm-up (session creation and ORT's first-run allocations are excluded).
 *
 * The anchor is NOT measured here: PyTorch 1.13 CPU at about 7.8 img/s (1.0 s per step) is the
 * figure quoted in ../shared/fixtures/README.md for the project's 2-core machines. The ratio is
 * against that quoted figure, so it is only meaningful on comparable hardware.
 *
 * yolo9t/s b8/320 and yolo9c b1/b2 640 in child processes, with yolo9c's peak RSS and per-image slope:
 * bench/train-step-suite.ts.
 *
 *   node --import tsx bench/train-step.ts [--steps 7] [--threads <cores>] [--batch 8] [--imgsz 320] [--float32-stats]
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { yolo9Family } from '../src/models/yolo9/family.ts';
import type { Yolo9Network } from '../src/models/yolo9/network.ts';
import { parseDevice } from '../src/runtime/device.ts';
import { Optimizer } from '../src/train/optimizer.ts';
import { openStepRunner } from '../src/train/runner.ts';
import { applyRunningStats } from '../src/graph/state-dict.ts';
import { noiseTrainBatch } from './noise-batch.ts';

const QUOTED_TORCH_IMG_PER_S = 7.8;

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '7' },
    warmup: { type: 'string', default: '2' },
    threads: { type: 'string', default: String(cpus().length) },
    batch: { type: 'string', default: '8' },
    imgsz: { type: 'string', default: '320' },
    device: { type: 'string', default: 'cpu' },
    'float32-stats': { type: 'boolean', default: false },
  },
});
const steps = Number(values.steps);
const warmup = Number(values.warmup);
const threads = Number(values.threads);
const batch = Number(values.batch);
const imgsz = Number(values.imgsz);
const maxTargets = 100;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};


const network = yolo9Family.create({ size: 't', nc: 80 }) as Yolo9Network;
const preciseStats = values['float32-stats'] !== true;
const runner = await openStepRunner(yolo9Family, network, { device: parseDevice(values.device), threads, imgsz: [imgsz, imgsz], maxTargets, preciseStats });
const optimizer = Optimizer.create(network.namedTensors(), { lr0: 0.01 });
const batches = [noiseTrainBatch(1, batch, imgsz, maxTargets), noiseTrainBatch(2, batch, imgsz, maxTargets)];

const times: number[] = [];
let finite = true;
const parts: Array<{ step: number; host: number }> = [];
try {
  for (let k = 0; k < warmup + steps; k++) {
    const t0 = performance.now();
    const r = await runner.run(batches[k % 2]!);
    const t1 = performance.now();
    finite &&= Number.isFinite(r.loss.total) && [...r.gradients.values()].every((g) => g.every(Number.isFinite));
    applyRunningStats(network, r.runningStats);
    optimizer.step(r.gradients);
    const t2 = performance.now();
    if (k >= warmup) {
      times.push(t2 - t0);
      parts.push({ step: t1 - t0, host: t2 - t1 });
    }
  }
} finally {
  await runner.close();
}
const ms = median(times);
const imgPerS = batch / (ms / 1000);
const stepMs = median(parts.map((p) => p.step));
const hostMs = median(parts.map((p) => p.host));
console.log(`train step yolo9t b${batch} ${imgsz}x${imgsz} ${values.device} threads=${threads} BN stats ${preciseStats ? 'float64' : 'float32'}: ${imgPerS.toFixed(2)} img/s ` +
  `(median ${ms.toFixed(0)} ms over ${steps} steps: ORT forward+loss+backward ${stepMs.toFixed(0)} ms, host SGD + BN stats ${hostMs.toFixed(0)} ms)`);
console.log(`ratio to the QUOTED PyTorch 1.13 CPU anchor of ${QUOTED_TORCH_IMG_PER_S} img/s (fixtures README, not measured here): ${(imgPerS / QUOTED_TORCH_IMG_PER_S).toFixed(3)} ` +
  '(target >= 0.705, i.e. 5.5 img/s; >= 1.0 is parity)');
if (!finite) console.log('WARNING: the step produced a non-finite loss or gradient during the run; the timing above is of a broken step.');
