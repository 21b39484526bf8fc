/**
 * `libreyolo doctor <data.yaml>`: the dataset health check (src/doctor) before a long training run.
 * Prints the report (or one JSON line) on stdout and exits 0 (no errors), 1 (errors, or warnings with
 * --strict), 2 (usage) or 3 (dataset not found, unreadable or not a detection dataset).
 */
import cliProgress from 'cli-progress';
import { Command, Option } from 'commander';
import { diagnose, type DiagnoseOptions } from '../../doctor/diagnose.ts';
import { pyJson, type PyValue } from '../../doctor/pyjson.ts';
import { LibreYOLOError } from '../../errors.ts';
import { CliExit } from '../report.ts';
import { parseInteger } from '../values.ts';

interface DoctorFlags {
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

export function doctorCommand(): Command {
  const cmd = new Command('doctor')
    .description('Check a dataset for problems before training (exit 1 when errors are found).')
    .argument('[data]', 'dataset YAML (YOLO detection format) or bundled name, e.g. coco8')
    .option('--data <yaml>', 'dataset YAML (the positional form\'s alternative)')
    .option('--imgsz <n>', 'training image size for the pixel-size checks (tiny objects)', parseInteger('imgsz'), 640)
    .option('--fast', 'skip image decoding (no corruption, duplicate or leakage checks)', false)
    .option('--skip <ids>', 'comma-separated check ids or families to skip (e.g. images,labels.tiny_object)', '')
    .option('--only <ids>', 'comma-separated check ids or families to run exclusively', '')
    .option('--strict', 'warnings also fail the exit code (CI gates)', false)
    .option('--download', 'download a missing dataset from the YAML\'s URL (never runs scripts)', false)
    .addOption(new Option('--json', 'print one JSON object on stdout').default(false))
    .option('--quiet', 'no progress on stderr', false)
    .option('--help-json', 'print this command\'s parameters as JSON', false);
  return cmd.action(async (positional: string | undefined, flags: DoctorFlags) => {
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
  });
}
