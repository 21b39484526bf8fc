/**
 * Run artifacts: the run directory `runs/train/<name>[N]`, `results.csv` (columns from
 * the first row, new columns appended as they appear, rows rewritten atomically each epoch),
 * `train_config.yaml` and `summary.json`. Values are written as Python writes them (`True`,
 * `0.5`, `1.0`, `1e-05`, empty for None) so the original's readers see the same text.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Scalar, stringify as toYaml } from 'yaml';
import { checkOutputFolder, fileInTheWay, writeFileAtomic } from '../util/fs.ts';

/** `<project>/<name>`, or `<name>2`, `<name>3`, ... when it exists and `existOk` is false. */
export async function makeRunDir(project: string, name: string, existOk: boolean, cwd = process.cwd()): Promise<string> {
  const base = resolve(cwd, project, name);
  // A file where a folder of project/name should be: said plainly, not as mkdir's EEXIST.
  checkOutputFolder(fileInTheWay(resolve(cwd, project)) !== null ? 'project' : 'name', base);
  let dir = base;
  if (!existOk) for (let n = 2; existsSync(dir); n++) dir = `${base}${n}`;
  await mkdir(join(dir, 'weights'), { recursive: true });
  return dir;
}

/** Python's `repr(float)` / `str(int)`. */
export function pyNumber(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${x}.0`;
  // shortest round-trip digits, laid out with Python's thresholds (scientific below 1e-4 or from 1e16)
  const [mant, expStr] = x.toExponential().split('e') as [string, string];
  const exp = Number(expStr);
  if (exp < -4 || exp >= 16) {
    return `${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  return String(x);
}

export type CsvValue = number | string | boolean | null | undefined;

function cell(v: CsvValue, integer = false): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return integer && Number.isInteger(v) ? String(v) : pyNumber(v);
  return /[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/** Columns that hold Python ints. */
const INT_COLUMNS = new Set(['epoch', 'best_epoch']);

export class ResultsCsv {
  private readonly columns: string[] = [];
  private readonly rows: Array<Record<string, CsvValue>> = [];
  constructor(readonly path: string) {}

  get header(): readonly string[] {
    return this.columns;
  }

  /** Adds a row (keys in column order) and rewrites the file. */
  async append(row: Record<string, CsvValue>): Promise<void> {
    for (const k of Object.keys(row)) if (!this.columns.includes(k)) this.columns.push(k);
    this.rows.push(row);
    await this.flush();
  }

  /** The value of `column` in the last row (as written), or undefined. */
  lastValue(column: string): CsvValue {
    return this.rows[this.rows.length - 1]?.[column];
  }

  /** Rows already on disk from a resumed run come back so the file keeps its history. */
  load(text: string): void {
    const lines = text.split(/\r?\n/).filter((l) => l !== '');
    if (!lines.length) return;
    const head = splitCsv(lines[0]!);
    for (const c of head) if (!this.columns.includes(c)) this.columns.push(c);
    for (const line of lines.slice(1)) {
      const vals = splitCsv(line);
      this.rows.push(Object.fromEntries(head.map((c, i) => [c, vals[i] ?? ''])));
    }
  }

  async flush(): Promise<void> {
    const lines = [this.columns.map((c) => cell(c)).join(',')];
    for (const r of this.rows) lines.push(this.columns.map((c) => cell(r[c], INT_COLUMNS.has(c))).join(','));
    await writeFileAtomic(this.path, `${lines.join('\n')}\n`);
  }
}

function splitCsv(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') { cur += '"'; i++; } else if (c === '"') quoted = false; else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { out.push(cur); cur = ''; } else cur += c;
  }
  out.push(cur);
  return out;
}

/** YAML; numbers under keys `isFloat` names keep a fractional part (`1.0`, as Python floats dump). */
export async function writeYaml(path: string, obj: Record<string, unknown>, isFloat: (key: string) => boolean = () => false): Promise<void> {
  const asFloat = (v: unknown): unknown => {
    if (typeof v === 'number' && Number.isFinite(v)) return Object.assign(new Scalar(v), { minFractionDigits: 1 });
    return Array.isArray(v) ? v.map(asFloat) : v;
  };
  const doc = Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, isFloat(k) ? asFloat(v) : v]));
  await writeFileAtomic(path, toYaml(doc, { lineWidth: 0 }));
}

export async function writeJson(path: string, obj: unknown): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(obj, null, 2)}\n`);
}
