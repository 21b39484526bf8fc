/** What `libreyolo doctor` does once its flags are parsed (imported only when it runs). */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { diagnose, type DiagnoseOptions } from '../../doctor/diagnose.ts';
import { pyJson, type PyValue } from '../../doctor/pyjson.ts';
import { LibreYOLOError } from '../../errors.ts';
import { CliExit } from '../report.ts';

export interface DoctorFlags {
  data?: string;
  imgsz: number;
  fast: boolean;
  skip: string;
  only: string;
  strict: boolean;
  download: boolean;
  json: boolean;
  quiet: boolean;
  helpJson: boolean;
}

/** Datasets smaller than this scan in a moment: no bar. */
const PROGRESS_MIN_IMAGES = 200;

/** A transient bar on a terminal's stderr while the images are scanned. */
function progressBar(): NonNullable<DiagnoseOptions['progress']> {
  let bar: cliProgress.SingleBar | null = null;
  return {
    start(total) {
      if (total < PROGRESS_MIN_IMAGES) return;
      bar = new cliProgress.SingleBar({
        stream: process.stderr, format: 'doctor: scanning images |{bar}| {value}/{total} | {eta_formatted}', barsize: 30,
        hideCursor: true, clearOnComplete: true, etaBuffer: 200,
      }, cliProgress.Presets.shades_classic);
      bar.start(total, 0);
    },
    tick() { bar?.increment(); },
    stop() { bar?.stop(); bar = null; },
  };
}

/** `--help-json`: the command's parameters and flags as data, for agents. */
function helpJson(cmd: Command): string {
  const params: PyValue[] = [new Map<string, PyValue>([['name', 'data'], ['type', 'text'], ['help', 'Dataset YAML (YOLO detection format), positional or --data']])];
  const flags: string[] = [];
  for (const o of cmd.options) {
    const name = o.attributeName();
    if (name === 'helpJson' || name === 'data') continue;
    const info = new Map<string, PyValue>([['name', o.long!.slice(2).replace(/-/g, '_')], ['type', o.isBoolean() ? 'boolean' : name === 'imgsz' ? 'integer' : 'text']]);
    if (o.defaultValue !== undefined) info.set('default', o.defaultValue as PyValue);
    info.set('help', o.description);
    params.push(info);
    if (o.isBoolean()) flags.push(o.long!);
  }
  return pyJson(new Map<string, PyValue>([['schema_version', 1], ['command', 'doctor'], ['parameters', params], ['flags', flags.sort()]]));
}

export async function runDoctor(positional: string | undefined, flags: DoctorFlags, cmd: Command): Promise<void> {
  if (flags.helpJson) {
    process.stdout.write(`${helpJson(cmd)}\n`);
    return;
  }
  if (positional !== undefined && flags.data !== undefined && positional !== flags.data) {
    throw new LibreYOLOError('config_conflict', `Dataset given twice with different values: '${positional}' and '${flags.data}'. Pass it once.`);
  }
  const data = positional ?? flags.data;
  if (!data) throw new LibreYOLOError('config_required_key', 'Missing dataset. Usage: libreyolo doctor <data.yaml>');
  if (!flags.quiet) process.stderr.write(`Checking ${data}...\n`);
  const report = await diagnose(data, {
    imgsz: flags.imgsz, fast: flags.fast, skip: flags.skip.split(','), only: flags.only.split(','), download: flags.download,
    ...(process.stderr.isTTY && !flags.quiet && !flags.json ? { progress: progressBar() } : {}),
    ...(flags.quiet ? { log: () => undefined } : {}),
  });
  const code = report.exitCode(flags.strict);
  if (flags.json) {
    const out = report.toJsonValue();
    out.set('data', data).set('exit_code', code).set('schema_version', 1);
    process.stdout.write(`${pyJson(out)}\n`);
  } else {
    process.stdout.write(`${report.renderHuman()}\n`);
  }
  if (code !== 0) throw new CliExit(code);
}
