/**
 * `--repeat N` aggregates. Throughput is averaged over the trials with its population standard
 * deviation (what `compare` needs for a significance call); everything else is the last trial's.
 * A training aggregate also averages the scalar metrics and says "mixed" when verdicts disagree.
 */
import { isIntKey, pyRound } from './pyfmt.ts';
import type { ProfileAnalysis } from './schema.ts';
import { mean, pstdev } from './stats.ts';

export const INFER_REPEAT_FILE = 'infer_repeat.json';
export const RUN_REPEAT_FILE = 'profile_repeat.json';

function setThroughput(agg: ProfileAnalysis, trials: readonly number[]): void {
  const m = pyRound(mean(trials), 2);
  const sd = pyRound(pstdev(trials), 2);
  agg.img_per_s = m;
  agg.img_per_s_std = sd;
  agg.img_per_s_n = trials.length;
  agg.img_per_s_trials = trials.map((t) => pyRound(t, 2));
  Object.assign(agg.metrics, { img_per_s: m, img_per_s_std: sd, img_per_s_n: trials.length });
  if ('throughput_img_s' in agg.metrics) agg.metrics.throughput_img_s = m;
}

/** `infer --repeat`: the last trial with the trials' mean img/s, its std and n. */
export function aggregateInferTrials(last: ProfileAnalysis, trials: readonly number[]): ProfileAnalysis {
  const agg: ProfileAnalysis = { ...last, metrics: { ...last.metrics } };
  setThroughput(agg, trials);
  return agg;
}

const AVERAGED = [
  'step_ms', 'gpu_util', 'gpu_util_raw', 'gpu_busy_ms_per_step', 'mean_kernel_us', 'kernels_per_step', 'memcpy_ms_per_step',
  'host_overhead_ms_per_step', 'launches_per_step', 'dataload_ms', 'dataload_frac', 'tensorcore_pct', 'cuda_mallocs_per_step',
] as const;
const METRIC_ALIAS: Record<string, string> = { gpu_busy_ms_per_step: 'gpu_busy_ms', memcpy_ms_per_step: 'memcpy_ms', host_overhead_ms_per_step: 'host_overhead_ms' };

/** `run --repeat`: scalar metrics averaged across trials; kernel lists and the trace from the last one. */
export function aggregateRunTrials(profiles: readonly ProfileAnalysis[], paths: readonly string[], trials: readonly number[]): ProfileAnalysis {
  const last = profiles[profiles.length - 1]!;
  const agg: ProfileAnalysis = { ...last, metrics: { ...last.metrics } };
  setThroughput(agg, trials);
  agg.aggregation = {
    n: profiles.length, profiles: [...paths], representative_profile: paths[paths.length - 1],
    note: 'scalar metrics are averaged; kernel lists and trace view use the final trial.',
  };
  for (const key of AVERAGED) {
    const vals = profiles.map((p) => p[key]).filter((v): v is number => typeof v === 'number');
    if (!vals.length) continue;
    let v = pyRound(mean(vals), 3);
    // Counts stay whole (the original's int(round(...)), half-even).
    if (isIntKey(key)) v = pyRound(v);
    (agg as unknown as Record<string, unknown>)[key] = v;
    agg.metrics[METRIC_ALIAS[key] ?? key] = v;
  }
  const bounds = new Set(profiles.map((p) => p.bound).filter(Boolean));
  if (bounds.size > 1) {
    agg.bound = 'mixed';
    agg.metrics.bound = 'mixed';
    agg.bound_why = 'repeat trials produced mixed bottleneck verdicts';
  }
  return agg;
}
