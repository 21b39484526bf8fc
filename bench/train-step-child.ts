/**
 * One training-step configuration in its own process (bench/train-step.ts and the step-memory test
 * run it as a child, so each peak RSS is that configuration's alone): a fresh network of the family (yolo9 by default), its
 * train step session, `warmup + steps` steps of forward + loss + backward plus the host SGD update,
 * then one JSON line: the median step time, the process's peak RSS and the RSS after the session
 * was created (before any step).
 *
 * `--weights <checkpoint>` starts from that checkpoint's weights (its class count) instead.
 *
 *   node --import tsx bench/train-step-child.ts [--family yolo9] [--weights <path>] --size t --batch 2 --imgsz 320 [--steps 1] [--warmup 1] [--threads N] [--keep-activations] [--mem-pattern] [--old-graph] [--shaped] [--no-cpu-arena] [--lr0 0.01]
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import '../src/models/index.ts';
import { getFamily } from '../src/models/registry.ts';
import { parseDevice } from '../src/runtime/device.ts';
import { Optimizer } from '../src/train/optimizer.ts';
import { openStepRunner } from '../src/train/runner.ts';
import { applyRunningStats } from '../src/graph/state-dict.ts';
import { loadCheckpointFile } from '../src/weights/checkpoint.ts';
import { noiseTrainBatch } from './noise-batch.ts';
import { peakRssKb } from '../test/helpers/peak-rss.ts';

// --expose-gc on the command line would pass to ORT's worker threads, which refuse it; set at run time
// the flag exposes gc() to a fresh context only.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const { values } = parseArgs({
  options: {
    family: { type: 'string', default: 'yolo9' },
    weights: { type: 'string' },
    size: { type: 'string', default: 't' },
    batch: { type: 'string', default: '1' },
    imgsz: { type: 'string', default: '320' },
    steps: { type: 'string', default: '1' },
    warmup: { type: 'string', default: '1' },
    threads: { type: 'string', default: String(cpus().length) },
    // The graph as before recompute.ts: every forward value the backward reads is kept.
    'keep-activations': { type: 'boolean', default: false },
    // ORT's memory pattern on, as train sessions had it before.
    'mem-pattern': { type: 'boolean', default: false },
    // All of these: the step as it was before issue 24.
    'old-graph': { type: 'boolean', default: false },
    // Every static shape declared, as before graph/passes/hide-shapes.ts: ORT's planner then holds
    // dead activations' buffers for later values of the same shape.
    shaped: { type: 'boolean', default: false },
    // ORT's CPU arena off: every tensor is its own malloc (an allocator experiment).
    'no-cpu-arena': { type: 'boolean', default: false },
    // The host SGD's learning rate (a DETR from a checkpoint diverges at the default 0.01).
    lr0: { type: 'string', default: '0.01' },
    // ORT's graph optimisation level of the step sessions.
    'opt-level': { type: 'string', default: 'all' },
  },
});
const batch = Number(values.batch);
const imgsz = Number(values.imgsz);
const steps = Number(values.steps);
const warmup = Number(values.warmup);
const maxTargets = 100;
const old = values['old-graph'] === true;

const family = getFamily(values.family!);
const stateDict = values.weights ? (await loadCheckpointFile(values.weights)).stateDict : undefined;
const network = family.create({ size: values.size!, nc: 80, ...(stateDict ? { stateDict } : {}) });
const runner = await openStepRunner(family, network, { device: parseDevice('cpu'), threads: Number(values.threads), imgsz: [imgsz, imgsz], maxTargets, recomputeCheap: !old && values['keep-activations'] !== true, hideShapes: !old && values.shaped !== true, memPattern: old || values['mem-pattern'] === true, ...(values['no-cpu-arena'] ? { cpuArena: false } : {}), optimizationLevel: values['opt-level'] as 'all' });
const optimizer = Optimizer.create(network.namedTensors(), { lr0: Number(values.lr0) });
const batches = [noiseTrainBatch(1, batch, imgsz, maxTargets), noiseTrainBatch(2, batch, imgsz, maxTargets)];
const tCreate = performance.now();
await runner.prepare(batch);
const createMs = performance.now() - tCreate;
const sessionRssMb = process.memoryUsage().rss / 2 ** 20;
const times: number[] = [];
let finite = true;
try {
  for (let k = 0; k < warmup + steps; k++) {
    // The JS heap's garbage is collected before each step, so the peak is the step's own memory
    // rather than whatever the last step left for the collector (some 15 MiB either way).
    collectGarbage();
    const t0 = performance.now();
    const r = await runner.run(batches[k % 2]!);
    finite &&= Number.isFinite(r.loss.total);
    applyRunningStats(network, r.runningStats);
    optimizer.step(r.gradients);
    if (k >= warmup) times.push(performance.now() - t0);
  }
} finally {
  await runner.close();
}
times.sort((a, b) => a - b);
process.stdout.write(`${JSON.stringify({
  family: family.name, size: values.size, batch, imgsz,
  stepMs: times.length ? times[times.length >> 1] : null,
  peakRssMb: peakRssKb() / 1024,
  sessionRssMb,
  createMs,
  finite,
})}\n`);
