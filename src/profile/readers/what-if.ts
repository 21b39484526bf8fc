/**
 * `profile what-if`: what removing a kernel category or N launches per step would buy, before the
 * change is written. Below 80% device utilisation the step is host/launch-bound, so the gain is the
 * launches avoided times the measured host cost per launch; above it, the gain is less device work.
 */
import { ProfileError } from '../errors.ts';
import { pyF, pyFixed, pyRound } from '../pyfmt.ts';
import type { ProfileAnalysis } from '../schema.ts';
import { pctChange, type ReaderOutput } from './output.ts';

export const CAVEAT = 'rough estimate (per-launch host cost is approximate); verify by profiling.';

export interface WhatIfOptions {
  removeCategory?: string;
  removeLaunches?: number;
}

export function whatIfReader(a: ProfileAnalysis, o: WhatIfOptions): ReaderOutput {
  if (!o.removeCategory && (o.removeLaunches === undefined || o.removeLaunches === null)) {
    throw new ProfileError('specify --remove-category or --remove-launches', 2);
  }
  const step = a.step_ms;
  // Device time and host overhead were measured in the traced steps when those were separate: the
  // gain is worked out there and applied to the timed step as a ratio.
  const stepW = a.trace_window?.step_ms || step;
  const batch = Number(a.config?.batch) || 0;
  const host = a.host_overhead_ms_per_step || 0;
  const launches = a.launches_per_step || 1;
  const gpu = a.gpu_busy_ms_per_step || 0;
  const util = a.gpu_util || 0;
  const perLaunchMs = host / launches;
  let removedGpu = 0;
  let removedLaunches = o.removeLaunches || 0;
  if (o.removeCategory) {
    const want = o.removeCategory.toLowerCase();
    const cat = (a.categories ?? []).find((c) => c.name.toLowerCase().includes(want));
    if (!cat) throw new ProfileError(`no category matching '${o.removeCategory}'. have: ${(a.categories ?? []).map((c) => c.name).join(', ')}`, 2);
    removedGpu = cat.ms_per_step;
    // Launches attributed to the category by its share of device time.
    removedLaunches += Math.trunc((launches * cat.ms_per_step) / (gpu || 1));
  }
  let newStepW: number;
  let mechanism: string;
  if (util < 0.8) {
    newStepW = Math.max(stepW - removedLaunches * perLaunchMs, gpu + (a.dataload_ms || 0));
    mechanism = `host/launch-bound: ~${removedLaunches} fewer launches x ~${pyFixed(perLaunchMs * 1000, 0)}us host cost`;
  } else {
    newStepW = Math.max(stepW - removedGpu, host);
    mechanism = `compute-bound: ~${pyFixed(removedGpu, 1)} ms less GPU work`;
  }
  const newStep = stepW === step ? newStepW : step * (newStepW / stepW);
  const cur = a.img_per_s;
  const newImgs = batch && newStep ? pyRound(batch / (newStep / 1000), 1) : null;
  const json = {
    trace: a.trace, bound: a.bound, mechanism,
    removed: { gpu_ms: pyRound(removedGpu, 2), launches: removedLaunches },
    step_ms: { now: step, projected: pyRound(newStep, 1) },
    img_per_s: { now: cur, projected: newImgs },
    caveat: CAVEAT,
  };
  const lines = [`what-if [${a.bound}]: ${mechanism}`, `  step   ${pyF(step)} -> ~${pyFixed(newStep, 0)} ms`];
  if (newImgs && cur) lines.push(`  img/s  ${pyF(cur)} -> ~${pyFixed(newImgs, 0)}${pctChange(cur, newImgs)}`);
  lines.push('  (rough, verify by actually profiling the change)');
  return { json, text: lines.join('\n') };
}
