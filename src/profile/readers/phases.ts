/** `profile phases`: device and wall milliseconds, kernels and ops per step, by phase. */
import { ljust, pyFixed, rjust } from '../pyfmt.ts';
import type { ProfileAnalysis } from '../schema.ts';
import type { ReaderOutput } from './output.ts';

export function phasesReader(a: ProfileAnalysis): ReaderOutput {
  const lines = [`${ljust('phase', 11)} ${rjust('gpu_ms', 8)} ${rjust('wall_ms', 8)} ${rjust('kernels', 8)} ${rjust('ops', 7)}`];
  for (const p of a.phases ?? []) {
    const wall = p.wall_ms_per_step === null || p.wall_ms_per_step === undefined ? '-' : pyFixed(p.wall_ms_per_step, 1);
    lines.push(`${ljust(p.phase, 11)} ${rjust(pyFixed(p.gpu_ms_per_step, 1), 8)} ${rjust(wall, 8)} ${rjust(String(p.kernels_per_step), 8)} ${rjust(String(p.ops_per_step), 7)}`);
  }
  return { json: { trace: a.trace, phases: a.phases }, text: lines.join('\n') };
}
