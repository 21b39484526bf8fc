/** `profile kernels` and `profile ops`: the individual rows, filtered, sorted and cut to --top. */
import { LibreYOLOError } from '../../errors.ts';
import { pyFixed, rjust } from '../pyfmt.ts';
import type { KernelRow, OpRow, ProfileAnalysis } from '../schema.ts';
import type { ReaderOutput } from './output.ts';

export interface KernelsOptions {
  top: number;
  category?: string;
  grep?: string;
  tensorcore?: boolean;
  sort?: string;
  phase?: string;
}

/** Rows of one phase (`--phase`), or all rows; an unknown phase lists the phases present. */
function rowsFor<T>(all: T[], byPhase: Record<string, T[]> | undefined, phase: string | undefined): T[] {
  if (phase === undefined) return all ?? [];
  const phases = byPhase ?? {};
  if (!(phase in phases)) throw new LibreYOLOError('profile_argument_invalid', `unknown phase '${phase}'. available: ${Object.keys(phases).join(', ')}`);
  return phases[phase]!;
}

/** A case-insensitive search pattern; Python-only syntax (`(?P<n>...)`, a leading `(?i)`) is translated. */
function grepPattern(src: string): RegExp {
  const js = src.replace(/^\(\?i\)/, '').replace(/\(\?P</g, '(?<').replace(/\(\?P=(\w+)\)/g, '\\k<$1>');
  try {
    return new RegExp(js, 'i');
  } catch (err) {
    throw new LibreYOLOError('profile_argument_invalid', `invalid --grep pattern '${src}': ${(err as Error).message}`);
  }
}

/** Unlike the original (Python slicing), a negative --top is refused. */
function checkTop(top: number): void {
  if (!Number.isInteger(top) || top < 0) throw new LibreYOLOError('profile_argument_invalid', `--top must be an integer >= 0, got ${top}`);
}

const SORTS: Record<string, (a: KernelRow, b: KernelRow) => number> = {
  time: (a, b) => b.pct_of_gpu - a.pct_of_gpu,
  count: (a, b) => b.count_per_step - a.count_per_step,
  name: (a, b) => (a.kernel < b.kernel ? -1 : a.kernel > b.kernel ? 1 : 0),
};

export function kernelsReader(a: ProfileAnalysis, o: KernelsOptions): ReaderOutput {
  checkTop(o.top);
  const sort = SORTS[o.sort ?? 'time'];
  if (!sort) throw new LibreYOLOError('profile_argument_invalid', `--sort must be one of ${Object.keys(SORTS).join(', ')}, got '${o.sort}'`);
  let rows = [...rowsFor(a.kernels, a.kernels_by_phase, o.phase)];
  if (o.category) rows = rows.filter((k) => k.category.toLowerCase().includes(o.category!.toLowerCase()));
  if (o.grep !== undefined) {
    const re = grepPattern(o.grep);
    rows = rows.filter((k) => re.test(k.raw_name) || re.test(k.kernel));
  }
  if (o.tensorcore) rows = rows.filter((k) => k.tensorcore);
  rows.sort(sort);
  rows = rows.slice(0, o.top);
  const lines = [`${rjust('%GPU', 6)} ${rjust('ms/step', 9)} ${rjust('x/step', 7)} TC  kernel  [category]`];
  for (const k of rows) {
    lines.push(`${rjust(pyFixed(k.pct_of_gpu, 2), 6)} ${rjust(pyFixed(k.ms_per_step, 3), 9)} ${rjust(String(k.count_per_step), 7)}  ${k.tensorcore ? 'Y' : ' '}  ${k.kernel}  [${k.category}]`);
  }
  return { json: { trace: a.trace, matched: rows.length, kernels: rows }, text: lines.join('\n') };
}

export function opsReader(a: ProfileAnalysis, o: { top: number; phase?: string }): ReaderOutput {
  checkTop(o.top);
  const rows: OpRow[] = rowsFor(a.ops, a.ops_by_phase, o.phase).slice(0, o.top);
  const lines = [`${rjust('%cpu', 6)} ${rjust('ms/step', 9)} ${rjust('x/step', 7)}  op`];
  for (const r of rows) lines.push(`${rjust(pyFixed(r.pct_of_cpu_ops, 2), 6)} ${rjust(pyFixed(r.ms_per_step, 3), 9)} ${rjust(String(r.count_per_step), 7)}  ${r.op}`);
  return { json: { trace: a.trace, ops: rows }, text: lines.join('\n') };
}
