/**
 * `profile compare`: before -> after on throughput, ms per image, utilisation, host overhead,
 * launches and verdict. A throughput change is called significant only when both sides were
 * repeated (n >= 2): it must exceed twice the combined standard error, and the line shows the test.
 */
import { pyF, pyFixed, pyRound, pyStr } from '../pyfmt.ts';
import type { ProfileAnalysis } from '../schema.ts';
import { pctChange, percent, type ReaderOutput } from './output.ts';

export const SINGLE_RUN = "single run, use 'run --repeat N' for a significance call";
/** The same advice for inference profiles, which `profile infer --repeat N` repeats. */
export const SINGLE_INFER_RUN = "single run, use 'infer --repeat N' for a significance call";

function perImage(a: ProfileAnalysis): number | null {
  const batch = Number(a.config?.batch) || 0;
  return batch ? pyRound(a.step_ms / batch, 3) : null;
}

export function significance(a: ProfileAnalysis, b: ProfileAnalysis): { significant: boolean | null; why: string } {
  if (a.img_per_s === null || a.img_per_s === undefined || b.img_per_s === null || b.img_per_s === undefined) {
    return { significant: null, why: 'img/s unavailable' };
  }
  const na = a.img_per_s_n ?? 1, nb = b.img_per_s_n ?? 1;
  const sa = a.img_per_s_std, sb = b.img_per_s_std;
  if (na < 2 || nb < 2 || sa === null || sa === undefined || sb === null || sb === undefined) return { significant: null, why: a.mode === 'inference' && b.mode === 'inference' ? SINGLE_INFER_RUN : SINGLE_RUN };
  const se = Math.sqrt(sa ** 2 / na + sb ** 2 / nb);
  const d = Math.abs(b.img_per_s - a.img_per_s);
  return { significant: d > 2 * se, why: `|d|=${pyFixed(d, 1)} vs 2*SE=${pyFixed(2 * se, 1)}` };
}

export function compareReader(a: ProfileAnalysis, b: ProfileAnalysis, beforePath: string, afterPath: string): ReaderOutput {
  const sig = significance(a, b);
  const pa = perImage(a), pb = perImage(b);
  const json = {
    before: beforePath,
    after: afterPath,
    img_per_s: {
      before: a.img_per_s, after: b.img_per_s, std: [a.img_per_s_std ?? null, b.img_per_s_std ?? null],
      n: [a.img_per_s_n ?? 1, b.img_per_s_n ?? 1], significant: sig.significant, significance: sig.why,
    },
    ms_per_image: { before: pa, after: pb },
    gpu_util: { before: a.gpu_util, after: b.gpu_util },
    host_overhead_ms_per_step: { before: a.host_overhead_ms_per_step, after: b.host_overhead_ms_per_step },
    launches_per_step: { before: a.launches_per_step, after: b.launches_per_step },
    bound: { before: a.bound, after: b.bound },
  };
  // Unlike the original's bare tag, the text also shows the comparison that was made.
  const tag = sig.significant === null ? `  [${sig.why}]` : `  [${sig.significant ? 'significant' : 'NOT significant'}: ${sig.why}]`;
  const lines = [`img/s          ${pyF(a.img_per_s)} -> ${pyF(b.img_per_s)}${pctChange(a.img_per_s || 0, b.img_per_s || 0)}${tag}`];
  if (pa && pb) lines.push(`ms/image       ${pyF(pa)} -> ${pyF(pb)}${pctChange(pa, pb)}   (batch-independent speed)`);
  lines.push(
    `GPU util       ${percent(a.gpu_util)}% -> ${percent(b.gpu_util)}%`,
    `host overhead  ${pyF(a.host_overhead_ms_per_step)} -> ${pyF(b.host_overhead_ms_per_step)} ms/step`,
    `launches/step  ${pyStr(a.launches_per_step, 'launches_per_step')} -> ${pyStr(b.launches_per_step, 'launches_per_step')}`,
    `verdict        ${a.bound} -> ${b.bound}`,
  );
  return { json, text: lines.join('\n') };
}
