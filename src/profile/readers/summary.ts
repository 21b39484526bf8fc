/** `profile summary`: the high-level read of one profile. */
import { ljust, orQ, pyF, pyFixed, pyStr, rjust } from '../pyfmt.ts';
import type { ProfileAnalysis } from '../schema.ts';
import { percent, type ReaderOutput } from './output.ts';

/** Keys of `summary --json`, in order; only those present in the profile are printed. */
const JSON_KEYS = [
  'trace', 'mode', 'model', 'config', 'bound', 'bound_why', 'step_ms', 'img_per_s', 'latency', 'stages_ms', 'gpu_util',
  'gpu_busy_ms_per_step', 'mean_kernel_us', 'kernels_per_step', 'unique_kernels', 'memcpy_ms_per_step', 'tensorcore_pct',
  'peak_vram_mb', 'peak_rss_mb', 'dataload_ms', 'dataload_frac', 'host_overhead_ms_per_step', 'launches_per_step',
  'memory_pressure', 'cuda_mallocs_per_step', 'gpu_util_raw', 'window', 'trace_window', 'categories', 'phases_gpu', 'top_kernels', 'notes',
] as const;

export function summaryReader(a: ProfileAnalysis): ReaderOutput {
  const json = Object.fromEntries(JSON_KEYS.filter((k) => k in a).map((k) => [k, a[k]]));
  const lines = [
    `model ${orQ(a.model)}  |  ${orQ(a.img_per_s)} img/s  |  step ${pyF(a.step_ms)} ms  |  ${pyStr(a.kernels_per_step, 'kernels_per_step')} kernels/step @ ~${pyFixed(a.mean_kernel_us ?? 0, 0)}us`,
  ];
  if (a.mode === 'inference') {
    const lat = a.latency;
    const st = a.stages_ms;
    lines.push(
      `latency  p50 ${pyF(lat?.p50_ms)} ms | p90 ${pyF(lat?.p90_ms)} ms | p99 ${pyF(lat?.p99_ms)} ms  (${pyStr(lat?.n, 'n')} samples)`,
      `stages   preprocess ${pyF(st?.preprocess)} ms | forward ${pyF(st?.forward)} ms | postprocess/NMS ${pyF(st?.postprocess)} ms`,
    );
  }
  lines.push(
    `GPU util ${percent(a.gpu_util)}%  (${pyF(a.gpu_busy_ms_per_step)} ms busy)  |  Tensor Cores ${pyFixed(a.tensorcore_pct ?? 0, 0)}%  |  peak VRAM ${orQ(a.peak_vram_mb)} MB  |  memcpy ${pyF(a.memcpy_ms_per_step)} ms`,
    `host overhead ${pyF(a.host_overhead_ms_per_step)} ms/step  |  ${pyStr(a.launches_per_step, 'launches_per_step')} kernel launches/step`,
  );
  if (a.peak_rss_mb !== undefined && a.peak_rss_mb !== null) lines.push(`peak RSS ${pyF(a.peak_rss_mb)} MB`);
  const tw = a.trace_window;
  if (tw) {
    const pct = tw.profiler_overhead_pct === null || tw.profiler_overhead_pct === undefined ? '?' : pyFixed(tw.profiler_overhead_pct, 1, true);
    lines.push(`trace    ${tw.steps} separate steps with ORT's profiler on (forward ${pyF(tw.forward_ms)} ms, ${pct}%); util/host overhead from those steps (${pyF(tw.step_ms)} ms/step)`);
  }
  if (a.memory_pressure) lines.push('** MEMORY-PRESSURE: VRAM thrash, utilisation/throughput here are unreliable **');
  lines.push(`>> ${String(a.bound ?? '').toUpperCase()}: ${a.bound_why ?? ''}`, 'kernel mix:');
  for (const c of a.categories ?? []) lines.push(`  ${ljust(c.name, 17)} ${rjust(pyFixed(c.pct, 1), 5)}%   ${pyFixed(c.ms_per_step, 1)} ms/step`);
  lines.push('top kernels/step:');
  for (const k of a.top_kernels ?? []) {
    lines.push(`  ${rjust(pyFixed(k.pct_of_gpu, 1), 5)}%  ${rjust(pyFixed(k.ms_per_step, 3), 6)} ms  x${ljust(String(k.count_per_step), 4)} ${k.kernel}${k.tensorcore ? ' [TC]' : ''}`);
  }
  for (const note of a.notes ?? []) lines.push(`note: ${note}`);
  return { json, text: lines.join('\n') };
}
