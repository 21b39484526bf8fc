/**
 * `profile what-if`: what removing a kernel category or N launches per step would buy, before the
 * change is written. Below 80% device utilisation the step is host/launch-bound, so the gain is the
 * launches avoided times the measured host cost per launch; above it, the gain is less device work.
 */
import { LibreYOLOError } from '../../errors.ts';
import { pyF, pyFixed, pyRound } from '../pyfmt.ts';
import type { ProfileAnalysis } from '../schema.ts';
import type { ReaderOutput } from './output.ts';

export const CAVEAT = 'rough estimate (per-launch host cost is approximate); verify by profiling.';

export interface WhatIfOptions {
  removeCategory?: string;
  removeLaunches?: number;
}

const decimals = (x: number): number => (pyF(x).split('.')[1] ?? '').replace(/e.*/, '').length;

/** `x` with the digits of `now`, and more while the two would print alike though they differ. */
function shown(x: number, now: number): string {
  let d = Math.min(decimals(now), 6);
  while (d < 6 && x !== now && pyFixed(x, d) === pyFixed(now, d)) d++;
  return pyFixed(x, d);
}

/** The relative change in %, with as many decimals as it takes for a non-zero change to show. */
function changePct(before: number, after: number): string {
  const pct = ((after - before) / before) * 100;
  let d = 0;
  while (d < 4 && pct !== 0 && /^[+-]0(\.0*)?$/.test(pyFixed(pct, d, true))) d++;
  return pyFixed(pct, d, true);
}

export function whatIfReader(a: ProfileAnalysis, o: WhatIfOptions): ReaderOutput {
  if (!o.removeCategory && (o.removeLaunches === undefined || o.removeLaunches === null)) {
    throw new LibreYOLOError('profile_argument_invalid', 'specify --remove-category or --remove-launches');
  }
  if (o.removeLaunches !== undefined && o.removeLaunches !== null && (!Number.isInteger(o.removeLaunches) || o.removeLaunches < 0)) {
    throw new LibreYOLOError('profile_argument_invalid', `--remove-launches must be an integer >= 0, got ${o.removeLaunches}`);
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
    if (!cat) throw new LibreYOLOError('profile_argument_invalid', `no category matching '${o.removeCategory}'. have: ${(a.categories ?? []).map((c) => c.name).join(', ')}`);
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
  // The projection scales the measured img/s by the step ratio (so an unchanged step projects the
  // same img/s, not a re-derived batch/step that differs by rounding); rounded only for display.
  const raw = newStep ? (cur ? cur * (step / newStep) : batch ? batch / (newStep / 1000) : null) : null;
  const newImgs = raw === null ? null : pyRound(raw, Math.max(1, cur ? decimals(cur) : 1));
  const json = {
    trace: a.trace, bound: a.bound, mechanism,
    removed: { gpu_ms: pyRound(removedGpu, 2), launches: removedLaunches },
    step_ms: { now: step, projected: pyRound(newStep, 1) },
    img_per_s: { now: cur, projected: newImgs },
    caveat: CAVEAT,
  };
  const lines = [`what-if [${a.bound}]: ${mechanism}`, `  step   ${pyF(step)} -> ~${shown(newStep, step)} ms`];
  if (raw && cur) lines.push(`  img/s  ${pyF(cur)} -> ~${shown(raw, cur)} (${changePct(cur, raw)}%)`);
  // The mechanism's figures are per traced step; without this line a 21 ms gain next to a 12 ms
  // drop in the timed step reads as an error.
  if (stepW !== step) lines.push(`  (worked out on the traced step, ${pyF(stepW)} -> ~${shown(newStepW, stepW)} ms, and applied to the timed step as a ratio)`);
  lines.push('  (rough, verify by actually profiling the change)');
  return { json, text: lines.join('\n') };
}
