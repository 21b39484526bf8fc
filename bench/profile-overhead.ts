/**
 * What tracing costs.
 * `profile infer`: img/s with --trace and with --no-trace, alternated in one process so machine
 * noise hits both alike, and their ratio (target: tracing costs <= 10%). Also printed: the wall time
 * each mode takes, and how much ORT's profiler slows the separate traced steps (that slowdown is
 * kept out of the reported img/s by design, so it is shown on its own).
 * `profile run`: img/s of the measured window with the trace on (`libreyolo profile run`) against
 * the same window of a plain `train` (the same trainer and steps, only the window's timestamps
 * taken: no ORT profiling, no trace), alternated the same way. In training ORT's profiler runs
 * inside the measured steps, so this ratio is the cost a training profile's img/s carries. A third
 * mode splits that cost by owner: the plain train with its step session created with ORT's
 * profiling on and nothing of ours (no host spans, no trace read or written), so
 * ort/plain is ONNX Runtime's own per-node profiling and profile-run/ort is ours.
 *
 *   node --import tsx bench/profile-overhead.ts [--rounds 3] [--runs 30] [--warmup 5] [--imgsz 640] [--threads N] [--weights path]
 *       [--train-rounds 1] [--train-imgsz 160] [--train-batch 8] [--train-steps 20] [--train-warmup 5] [--skip-infer] [--skip-train]
 */
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { generateSynthDataset } from '../src/data/synth.ts';
import { runInferProfile } from '../src/app/infer-run.ts';
import { mean } from '../src/profile/stats.ts';
import { runTrainProfile } from '../src/app/profile-run.ts';
import { trainProfilerFactory } from '../src/profile/train-profiler.ts';
import { createFreshModel } from '../src/load.ts';
import { trainModel } from '../src/train/trainer.ts';
import type { TrainProfiler } from '../src/train/profiler-port.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' }, runs: { type: 'string', default: '30' }, warmup: { type: 'string', default: '5' },
    imgsz: { type: 'string', default: '640' }, threads: { type: 'string', default: String(cpus().length) },
    weights: { type: 'string', default: resolve(import.meta.dirname, '../../shared/fixtures/yolo9t_ref.pt') },
    'train-rounds': { type: 'string', default: '1' }, 'train-imgsz': { type: 'string', default: '160' }, 'train-batch': { type: 'string', default: '8' },
    'train-steps': { type: 'string', default: '20' }, 'train-warmup': { type: 'string', default: '5' },
    'skip-infer': { type: 'boolean', default: false }, 'skip-train': { type: 'boolean', default: false },
  },
});
const f = (xs: number[]): string => xs.map((x) => x.toFixed(1)).join(', ');

if (!values['skip-infer']) {
  const rounds = Number(values.rounds);
  const project = await mkdtemp(join(tmpdir(), 'ly-profile-bench-'));
  const img: Record<'trace' | 'notrace', number[]> = { trace: [], notrace: [] };
  const wall: Record<'trace' | 'notrace', number[]> = { trace: [], notrace: [] };
  const overhead: number[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      // Alternate which mode goes first so neither always runs on a warmer machine.
      for (const mode of r % 2 ? (['trace', 'notrace'] as const) : (['notrace', 'trace'] as const)) {
        const t0 = performance.now();
        const { profile } = await runInferProfile({
          weights: values.weights, size: 't', batch: 1, imgsz: Number(values.imgsz), half: false, ampDtype: 'float16',
          warmup: Number(values.warmup), runs: Number(values.runs), repeat: 1, conf: 0.25, iou: 0.45, maxDet: 300, device: 'cpu',
          trace: mode === 'trace', project, threads: Number(values.threads),
        });
        wall[mode].push((performance.now() - t0) / 1000);
        img[mode].push(profile.img_per_s ?? 0);
        if (mode === 'trace' && profile.trace_window?.profiler_overhead_pct != null) overhead.push(profile.trace_window.profiler_overhead_pct);
      }
    }
  } finally {
    await rm(project, { recursive: true, force: true });
  }
  const ratio = mean(img.trace) / mean(img.notrace);
  console.log(`profile infer yolo9t imgsz=${values.imgsz} cpu threads=${values.threads}: ${rounds} rounds x (warmup ${values.warmup} + runs ${values.runs}), modes alternated`);
  console.log(`  --no-trace  ${mean(img.notrace).toFixed(2)} img/s  (trials ${f(img.notrace)}; ${mean(wall.notrace).toFixed(1)} s per command)`);
  console.log(`  --trace     ${mean(img.trace).toFixed(2)} img/s  (trials ${f(img.trace)}; ${mean(wall.trace).toFixed(1)} s per command)`);
  console.log(`  ratio trace/no-trace ${ratio.toFixed(3)}: tracing costs ${((1 - ratio) * 100).toFixed(1)}% of img/s (target <= 10%)`);
  console.log(`  ORT's profiler slows the separate traced steps' forward by ${f(overhead)}% (kept out of the img/s above)`);
}


if (!values['skip-train']) {
  const rounds = Number(values['train-rounds']);
  const imgsz = Number(values['train-imgsz']);
  const batch = Number(values['train-batch']);
  const steps = Number(values['train-steps']);
  const warmup = Number(values['train-warmup']);
  const threads = Number(values.threads);
  const root = await mkdtemp(join(tmpdir(), 'ly-profile-run-bench-'));
  const img: Record<'trace' | 'plain' | 'ort', number[]> = { trace: [], plain: [], ort: [] };
  const modes = ['plain', 'ort', 'trace'] as const;
  try {
    // One epoch holds the window (warmup + steps batches) with one batch to spare.
    const { yaml } = await generateSynthDataset({ out: join(root, 'shapes'), seed: 1, train: (warmup + steps + 1) * batch, val: 2, imgsz, classes: ['circle', 'square', 'triangle', 'star', 'ellipse', 'rectangle'] });
    for (let r = 0; r < rounds; r++) {
      // Rotate the order so no mode always runs first.
      for (const mode of modes.map((_, k) => modes[(k + r) % modes.length]!)) {
        const project = join(root, `${mode}-${r}`);
        if (mode === 'trace') {
          const { profile } = await runTrainProfile({
            data: yaml, weights: 'yolo9t', size: 't', batch, imgsz, workers: 2, amp: false, steps, warmup, repeat: 1, device: 'cpu', project, threads, cwd: root,
          });
          img.trace.push(profile.img_per_s ?? 0);
        } else {
          // The same trainer and window with the timing hooks only (trace off): what a plain train
          // measures; in `ort` mode its step session is also created with ORT's profiling on.
          const untraced = trainProfilerFactory(); // the trainer's context carries profile_trace: false
          const ortDir = join(root, `ort-${r}`);
          await mkdir(ortDir, { recursive: true });
          const model = createFreshModel('yolo9t', { device: 'cpu', threads });
          try {
            await trainModel(model, {
              data: yaml, epochs: 1, batch, imgsz, workers: 2, amp: false, device: 'cpu', profile: true, profile_then_stop: true, profile_trace: false,
              profile_steps: steps, profile_warmup: warmup, no_aug_epochs: 0, project, name: 'plain', exist_ok: true, verbose: false, threads,
            }, { cwd: root, warn: () => undefined, profiler: mode === 'plain' ? untraced : async (ctx) => withOrtProfiling(await untraced(ctx), join(ortDir, 'train')) });
          } finally {
            await model.close();
          }
          const summary = JSON.parse(readFileSync(join(project, 'plain', 'profile_summary.json'), 'utf8')) as { real: { img_per_s: number } };
          img[mode].push(summary.real.img_per_s);
        }
      }
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  const ratio = mean(img.trace) / mean(img.plain);
  const ort = mean(img.ort) / mean(img.plain);
  const ours = mean(img.trace) / mean(img.ort);
  console.log(`profile run yolo9t imgsz=${imgsz} batch=${batch} cpu threads=${threads}: ${rounds} rounds x (warmup ${warmup} + steps ${steps}), modes rotated`);
  console.log(`  plain train              ${mean(img.plain).toFixed(2)} img/s  (trials ${f(img.plain)})`);
  console.log(`  train + ORT profiling    ${mean(img.ort).toFixed(2)} img/s  (trials ${f(img.ort)}; session profiled, nothing of ours)`);
  console.log(`  profile run              ${mean(img.trace).toFixed(2)} img/s  (trials ${f(img.trace)})`);
  console.log(`  ratio profile-run/train ${ratio.toFixed(3)}: the trace costs ${((1 - ratio) * 100).toFixed(1)}% of the window's img/s`);
  console.log(`    of which ONNX Runtime's per-node profiling: ratio ort/train ${ort.toFixed(3)} (${((1 - ort) * 100).toFixed(1)}%)`);
  console.log(`    and ours (host spans, memory samples in the window): ratio profile-run/ort ${ours.toFixed(3)} (${((1 - ours) * 100).toFixed(1)}%)`);
}

/** An untraced profiler whose step session is nevertheless created with ORT's profiling on. */
function withOrtProfiling(p: TrainProfiler, prefix: string): TrainProfiler {
  return {
    ortProfilePrefix: prefix,
    get finished() { return p.finished; },
    wrapLoader: (b) => p.wrapLoader(b),
    phase: (name, fn) => p.phase(name, fn),
    step: () => p.step(),
    ...(p.close ? { close: () => p.close!() } : {}),
  };
}
