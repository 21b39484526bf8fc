/**
 * What tracing costs `profile infer`: img/s with --trace and with --no-trace, alternated in one
 * process so machine noise hits both alike, and their ratio (target: tracing costs <= 10%). Also
 * printed: the wall time each mode takes, and how much ORT's profiler slows the separate traced
 * steps (that slowdown is kept out of the reported img/s by design, so it is shown on its own).
 *
 *   node --import tsx bench/profile-overhead.ts [--rounds 3] [--runs 30] [--warmup 5] [--imgsz 640] [--threads N] [--weights path]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { runInferProfile } from '../src/profile/infer-run.ts';
import { mean } from '../src/profile/stats.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' }, runs: { type: 'string', default: '30' }, warmup: { type: 'string', default: '5' },
    imgsz: { type: 'string', default: '640' }, threads: { type: 'string', default: String(cpus().length) },
    weights: { type: 'string', default: resolve(import.meta.dirname, '../../shared/fixtures/yolo9t_ref.pt') },
  },
});
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
const f = (xs: number[]): string => xs.map((x) => x.toFixed(1)).join(', ');
const ratio = mean(img.trace) / mean(img.notrace);
console.log(`profile infer yolo9t imgsz=${values.imgsz} cpu threads=${values.threads}: ${rounds} rounds x (warmup ${values.warmup} + runs ${values.runs}), modes alternated`);
console.log(`  --no-trace  ${mean(img.notrace).toFixed(2)} img/s  (trials ${f(img.notrace)}; ${mean(wall.notrace).toFixed(1)} s per command)`);
console.log(`  --trace     ${mean(img.trace).toFixed(2)} img/s  (trials ${f(img.trace)}; ${mean(wall.trace).toFixed(1)} s per command)`);
console.log(`  ratio trace/no-trace ${ratio.toFixed(3)}: tracing costs ${((1 - ratio) * 100).toFixed(1)}% of img/s (target <= 10%)`);
console.log(`  ORT's profiler slows the separate traced steps' forward by ${f(overhead)}% (kept out of the img/s above)`);
