/** What a check reports, and the report of a run: sorting, counts, exit code, the text and JSON forms. */
import { pyJson, type PyValue } from './pyjson.ts';

export type Severity = 'error' | 'warning' | 'info';

export interface Finding {
  checkId: string;
  severity: Severity;
  message: string;
  split?: string;
  /** Offenders in all (the paths are capped). */
  count?: number;
  paths?: string[];
  details?: Map<string, PyValue>;
}

const ORDER: Record<Severity, number> = { error: 0, warning: 1, info: 2 };
const MARK: Record<Severity, string> = { error: 'E', warning: 'W', info: 'i' };

/** Errors, then warnings, then infos; stable by check id and split. */
export function sortFindings(findings: readonly Finding[]): Finding[] {
  return findings
    .map((f, i) => ({ f, i }))
    .sort((a, b) => ORDER[a.f.severity] - ORDER[b.f.severity] || cmp(a.f.checkId, b.f.checkId) || cmp(a.f.split ?? '', b.f.split ?? '') || a.i - b.i)
    .map(({ f }) => f);
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export interface SplitStats { images: number; instances: number; background: number }

export interface DoctorStats {
  yaml: string;
  root: string;
  nc: number | null;
  splits: Map<string, SplitStats>;
  /** Train instances by class name (or the id as a string when it has none), by id. */
  trainInstanceCounts: Map<string, number>;
  imagesScanned: boolean;
}

export class DoctorReport {
  constructor(readonly findings: Finding[], readonly stats: DoctorStats, readonly skippedChecks: string[]) {}

  count(severity: Severity): number {
    return this.findings.filter((f) => f.severity === severity).length;
  }

  /** 0 when healthy, 1 with errors (or, with `strict`, warnings). */
  exitCode(strict = false): number {
    if (this.count('error') > 0) return 1;
    return strict && this.count('warning') > 0 ? 1 : 0;
  }

  /** The JSON object, keys in the original's order; the CLI appends data, exit_code and schema_version. */
  toJsonValue(): Map<string, PyValue> {
    const s = this.stats;
    const splits = new Map<string, PyValue>();
    for (const [name, v] of s.splits) splits.set(name, new Map<string, PyValue>([['images', v.images], ['instances', v.instances], ['background', v.background]]));
    return new Map<string, PyValue>([
      ['summary', new Map<string, PyValue>([['errors', this.count('error')], ['warnings', this.count('warning')], ['infos', this.count('info')]])],
      ['stats', new Map<string, PyValue>([
        ['yaml', s.yaml], ['root', s.root], ['nc', s.nc], ['splits', splits],
        ['train_instance_counts', new Map<string, PyValue>(s.trainInstanceCounts)], ['images_scanned', s.imagesScanned],
      ])],
      ['findings', this.findings.map(findingJson)],
      ['skipped_checks', [...this.skippedChecks]],
    ]);
  }

  toJson(): string {
    return pyJson(this.toJsonValue());
  }

  /** The plain-text report (ASCII apart from what the dataset's own names and paths contain). */
  renderHuman(maxPaths = 3): string {
    const s = this.stats;
    const lines = [`LibreDoctor report for ${s.yaml || s.root || 'dataset'}`];
    for (const [name, v] of s.splits) lines.push(`  ${name}: ${v.images} images, ${v.instances} instances, ${v.background} background`);
    if (s.nc !== null) lines.push(`  classes: ${s.nc}`);
    lines.push('');
    for (const [severity, title] of [['error', 'ERRORS'], ['warning', 'WARNINGS'], ['info', 'INFO']] as const) {
      const group = this.findings.filter((f) => f.severity === severity);
      if (group.length === 0) continue;
      lines.push(`${title} (${group.length})`);
      for (const f of group) {
        lines.push(`  ${MARK[severity]} ${f.checkId}${f.split ? ` [${f.split}]` : ''}: ${f.message}`);
        const paths = f.paths ?? [];
        for (const p of paths.slice(0, maxPaths)) lines.push(`      ${p}`);
        if (paths.length > maxPaths) lines.push(`      ... and ${paths.length - maxPaths} more file(s) (see --json)`);
      }
      lines.push('');
    }
    if (this.skippedChecks.length) lines.push(`skipped checks: ${this.skippedChecks.join(', ')}`);
    const e = this.count('error'), w = this.count('warning');
    lines.push(e || w ? `${e} error(s), ${w} warning(s), ${this.count('info')} info(s).` : 'No problems found.');
    return lines.join('\n');
  }
}

function findingJson(f: Finding): Map<string, PyValue> {
  const m = new Map<string, PyValue>([['check_id', f.checkId], ['severity', f.severity], ['message', f.message]]);
  if (f.split !== undefined) m.set('split', f.split);
  if (f.count !== undefined) m.set('count', f.count);
  if (f.paths?.length) m.set('paths', [...f.paths]);
  if (f.details?.size) m.set('details', f.details);
  return m;
}

