/**
 * `libreyolo profile <subcommand>`: POSIX flags, or `key=value` for a key the subcommand has (other
 * tokens with '=' stay positionals: paths may contain it). `infer` measures and writes a profile; the
 * readers print one view of a profile to stdout (errors to stderr), each with `--json`. The readers'
 * exit codes are the group's own (2 missing file or unresolvable argument, 1 unparseable trace); a
 * failure that predict also has (weights, device) exits as predict does.
 */
import { Command, Option } from 'commander';
import { runInferProfile } from '../../app/infer-run.ts';
import { profileRunCommand } from './profile-run.ts';
import { loadProfile } from '../../profile/load.ts';
import { writeCompareHtml, writeReport } from '../../profile/report.ts';
import { pyF, pyJson } from '../../profile/pyfmt.ts';
import {
  compareReader, getReader, kernelsReader, opsReader, phasesReader, summaryReader, whatIfReader, type ReaderOutput,
} from '../../profile/readers/index.ts';
import { DEFAULT_MODEL } from '../../assets.ts';
import { LibreYOLOError } from '../../errors.ts';
import { closestWord } from '../../util/text.ts';
import { cliInvocation } from '../invocation.ts';
import { parseImgsz, parseInteger, parseIntegerAtLeast, parseNumber, raisedToFloor } from '../values.ts';

function print(out: ReaderOutput, json: boolean): void {
  process.stdout.write(`${json ? pyJson(out.json, out.compact ? undefined : 2) : out.text}\n`);
}

const jsonOption = (): Option => new Option('--json', 'JSON on stdout').default(false);

interface InferFlags {
  weights: string; size: string; batch: number; imgsz: number | [number, number]; half: boolean; ampDtype: string;
  warmup: number; runs: number; repeat: number; conf: number; iou: number; maxDet: number; device: string;
  trace: boolean; project: string; threads?: number; json: boolean;
}

function inferCommand(): Command {
  const cmd = new Command('infer');
  return cmd
    .description('Profile the inference path and write a profile (latency p50/p90/p99, img/s, stage split, kernels).')
    .argument('[source]', 'image or folder (default: the bundled sample image)')
    .option('--weights <weights>', 'model weights: file or name', 'LibreYOLO9t.pt')
    .option('--size <size>', 'model size variant', 't')
    .option('--batch <n>', 'images per forward', parseInteger('batch'), 1)
    .option('--imgsz <size>', 'input size', parseImgsz, 640)
    .option('--half', 'fp16 autocast for the forward pass (CUDA only; warns and runs fp32 elsewhere)', false)
    .option('--no-half', 'no fp16 autocast')
    .option('--amp-dtype <dtype>', 'autocast dtype: float16 or bfloat16', 'float16')
    .option('--warmup <n>', 'warmup iterations before measuring', parseInteger('warmup'), 20)
    .option('--runs <n>', 'measured iterations', parseInteger('runs'), 100)
    .option('--repeat <n>', 'repeat N times for a mean and standard deviation', parseInteger('repeat'), 1)
    .option('--conf <x>', 'confidence threshold (changes the NMS workload)', parseNumber('conf'), 0.25)
    .option('--iou <x>', 'NMS IoU threshold', parseNumber('iou'), 0.45)
    .option('--max-det <n>', 'max detections per image (changes the NMS workload)', parseIntegerAtLeast('--max-det', 1), 300)
    .option('--device <device>', 'device: 0 / cuda:0 (CUDA), cpu, webgpu', '0')
    .option('--trace', 'record a Chrome trace for kernel and op detail', true)
    .option('--no-trace', 'skip the trace')
    .option('--project <dir>', 'output root', 'runs/profile')
    .option('--threads <n>', 'ONNX Runtime intra-op threads (default: all cores)', parseIntegerAtLeast('--threads', 1))
    .addOption(jsonOption())
    .action(async (source: string | undefined, f: InferFlags) => {
      const warn = (m: string): void => void process.stderr.write(`Warning: ${m}\n`);
      // The original's floors, said out loud: it measures at least 2 runs, one image, one trial.
      f.warmup = raisedToFloor('--warmup', f.warmup, 0, warn);
      f.runs = raisedToFloor('--runs', f.runs, 2, warn);
      f.batch = raisedToFloor('--batch', f.batch, 1, warn);
      f.repeat = raisedToFloor('--repeat', f.repeat, 1, warn);
      // The seed's defaults need CUDA and a download; on a CPU-only machine these flags work offline.
      const cpuFlags = `--device cpu${cmd.getOptionValueSource('weights') === 'default' ? ` --weights ${DEFAULT_MODEL.replace(/\.pt$/, '')}` : ''}`;
      const { profilePath, profile: a, timelinePath } = await runInferProfile({
        ...(source !== undefined ? { source } : {}), weights: f.weights, size: f.size, batch: f.batch, imgsz: f.imgsz, half: f.half,
        ampDtype: f.ampDtype, warmup: f.warmup, runs: f.runs, repeat: f.repeat, conf: f.conf, iou: f.iou, maxDet: f.maxDet,
        device: f.device, trace: f.trace, project: f.project, ...(f.threads ? { threads: f.threads } : {}),
        warn, cpuFlags,
      });
      const lat = a.latency;
      if (f.json) {
        process.stdout.write(`${pyJson({
          profile: profilePath, mode: 'inference', img_per_s: a.img_per_s, img_per_s_std: a.img_per_s_std ?? null, img_per_s_n: a.img_per_s_n ?? 1,
          latency_p50_ms: lat?.p50_ms ?? null, latency_p90_ms: lat?.p90_ms ?? null, latency_p99_ms: lat?.p99_ms ?? null,
          bound: a.bound, stages_ms: a.stages_ms ?? null,
        }, 2)}\n`);
        return;
      }
      const spread = (a.img_per_s_n ?? 1) > 1 ? ` +/- ${pyF(a.img_per_s_std)} (n=${a.img_per_s_n})` : '';
      const st = a.stages_ms;
      process.stdout.write([
        `latency  p50 ${pyF(lat?.p50_ms)} ms | p90 ${pyF(lat?.p90_ms)} ms | p99 ${pyF(lat?.p99_ms)} ms  |  ${pyF(a.img_per_s)}${spread} img/s`,
        `stages   preprocess ${pyF(st?.preprocess)} ms | forward ${pyF(st?.forward)} ms | postprocess/NMS ${pyF(st?.postprocess)} ms`,
        `>> ${a.bound.toUpperCase()}: ${a.bound_why}`,
        `profile: ${profilePath}`,
        ...(timelinePath ? [`timeline: ${timelinePath}  (open it in a browser)`] : []),
        `next:    ${cliInvocation()} profile summary ${profilePath}`,
      ].join('\n') + '\n');
    });
}

const SORT_KEYS = ['time', 'count', 'name'];

function sortOption(v: string): string {
  if (!SORT_KEYS.includes(v)) throw new LibreYOLOError('config_range_error', `--sort must be one of ${SORT_KEYS.join(', ')}, got '${v}'`);
  return v;
}

function readerCommand(name: string, description: string): Command {
  return new Command(name).description(description).argument('<trace>', 'profile.json, an aggregate, or a profile_trace.json');
}

export function profileCommand(): Command {
  const group = new Command('profile')
    .description('Measure where the time goes in inference (and training), write a self-contained profile, and read it from several angles.')
    .usage('<command> [options]')
    .argument('[command]')
    .allowExcessArguments(true) // `profile sumary x.json` is answered as a mistyped command
    .action((cmd: string | undefined) => {
      if (cmd === undefined) return void process.stdout.write(group.helpInformation());
      const guess = closestWord(cmd, group.commands.map((c) => c.name()));
      const advice = guess ? `Did you mean '${guess}'?` : `Run '${cliInvocation()} profile' to list the commands.`;
      throw new LibreYOLOError('config_unknown_key', `unknown command 'profile ${cmd}'. ${advice}`, { suggestion: advice });
    });
  group.addCommand(profileRunCommand());
  group.addCommand(inferCommand());
  group.addCommand(readerCommand('summary', 'The high-level read: step, throughput, utilisation, verdict, kernel mix, top kernels.')
    .addOption(jsonOption())
    .action(async (trace: string, f: { json: boolean }) => print(summaryReader(await loadProfile(trace)), f.json)));
  group.addCommand(readerCommand('get', 'Print one metric and nothing else; omit the field to list the metrics.')
    .argument('[field]', 'metric name')
    .addOption(jsonOption())
    .action(async (trace: string, field: string | undefined, f: { json: boolean }) => print(getReader(await loadProfile(trace), trace, field), f.json)));
  group.addCommand(readerCommand('phases', 'Device ms, wall ms, kernels and ops per step, by phase.')
    .addOption(jsonOption())
    .action(async (trace: string, f: { json: boolean }) => print(phasesReader(await loadProfile(trace)), f.json)));
  group.addCommand(readerCommand('kernels', 'Individual kernels: share of device time, ms and invocations per step, category.')
    .option('--top <n>', 'show the first N', parseIntegerAtLeast('--top', 0), 20)
    .option('--category <substring>', 'filter by category: gemm, layout, norm, elementwise, pool')
    .option('--grep <regex>', 'filter by kernel name (case-insensitive regular expression)')
    .option('--tensorcore', 'only Tensor Core kernels', false)
    .option('--sort <key>', 'time, count or name', sortOption, 'time')
    .option('--phase <phase>', 'only one phase: preprocess, forward, postprocess, dataload, backward, ...')
    .addOption(jsonOption())
    .action(async (trace: string, f: { top: number; category?: string; grep?: string; tensorcore: boolean; sort: string; phase?: string; json: boolean }) =>
      print(kernelsReader(await loadProfile(trace), f), f.json)));
  group.addCommand(readerCommand('ops', 'The host view: ORT session ops and the package\'s own spans, by CPU time.')
    .option('--top <n>', 'show the first N', parseIntegerAtLeast('--top', 0), 20)
    .option('--phase <phase>', 'only one phase')
    .addOption(jsonOption())
    .action(async (trace: string, f: { top: number; phase?: string; json: boolean }) => print(opsReader(await loadProfile(trace), f), f.json)));
  group.addCommand(new Command('compare')
    .description('Before -> after: img/s (with a significance call when both were repeated), ms/image, utilisation, host overhead, launches, verdict.')
    .argument('<before>', 'reference profile').argument('<after>', 'new profile')
    .option('--html <file>', "also write both profiles' panels and the deltas side by side as a self-contained HTML page")
    .addOption(jsonOption())
    .action(async (before: string, after: string, f: { html?: string; json: boolean }) => {
      const a = await loadProfile(before);
      const b = await loadProfile(after);
      const out = compareReader(a, b, before, after);
      if (f.html !== undefined) {
        const html = await writeCompareHtml(a, b, before, after, f.html);
        out.json = { ...(out.json as object), html };
        out.text += `\nhtml           ${html}`;
      }
      print(out, f.json);
    }));
  group.addCommand(readerCommand('report', "Write timeline.html for a profile: the trace's timeline and the verdict panel, self-contained.")
    .option('--out <file>', 'where to write it (default: timeline.html beside the profile, never replacing one)')
    .addOption(jsonOption())
    .action(async (trace: string, f: { out?: string; json: boolean }) => {
      const r = await writeReport(trace, f.out);
      print({ json: { timeline: r.path, traced: r.traced }, text: `timeline: ${r.path}${r.traced ? '' : '  (no trace found: panel only)'}` }, f.json);
    }));
  group.addCommand(readerCommand('what-if', 'Estimate what removing a kernel category or N launches per step would gain.')
    .option('--remove-category <substring>', 'project removing a kernel category: gemm, layout, norm, elementwise, pool')
    .option('--remove-launches <n>', 'project removing N kernel launches per step (e.g. an op fusion)', parseIntegerAtLeast('--remove-launches', 0))
    .addOption(jsonOption())
    .action(async (trace: string, f: { removeCategory?: string; removeLaunches?: number; json: boolean }) =>
      print(whatIfReader(await loadProfile(trace), f), f.json)));
  return group;
}
