/**
 * `libreyolo profile <subcommand>`: POSIX flags, or `key=value` for a key the subcommand has (other
 * tokens with '=' stay positionals: paths may contain it). `infer` measures and writes a profile; the
 * readers print one view of a profile to stdout (errors to stderr), each with `--json`. The readers'
 * exit codes are the group's own (2 missing file or unresolvable argument, 1 unparseable trace); a
 * failure that predict also has (weights, device) exits as predict does.
 */
import { Command, Option } from 'commander';
import { profileRunCommand } from './profile-run.ts';
import { LibreYOLOError } from '../../errors.ts';
import { closestWord } from '../../util/text.ts';
import { cliInvocation } from '../invocation.ts';
import { lazyAction } from '../lazy-action.ts';
import { parseImgsz, parseInteger, parseIntegerAtLeast, parseNumber } from '../values.ts';

const jsonOption = (): Option => new Option('--json', 'JSON on stdout').default(false);

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
    .action(lazyAction(async () => (await import('../actions/profile.ts')).runInfer));
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
    .action(lazyAction(async () => (await import('../actions/profile.ts')).summary)));
  group.addCommand(readerCommand('get', 'Print one metric and nothing else; omit the field to list the metrics.')
    .argument('[field]', 'metric name')
    .addOption(jsonOption())
    .action(lazyAction(async () => (await import('../actions/profile.ts')).get)));
  group.addCommand(readerCommand('phases', 'Device ms, wall ms, kernels and ops per step, by phase.')
    .addOption(jsonOption())
    .action(lazyAction(async () => (await import('../actions/profile.ts')).phases)));
  group.addCommand(readerCommand('kernels', 'Individual kernels: share of device time, ms and invocations per step, category.')
    .option('--top <n>', 'show the first N', parseIntegerAtLeast('--top', 0), 20)
    .option('--category <substring>', 'filter by category: gemm, layout, norm, elementwise, pool')
    .option('--grep <regex>', 'filter by kernel name (case-insensitive regular expression)')
    .option('--tensorcore', 'only Tensor Core kernels', false)
    .option('--sort <key>', 'time, count or name', sortOption, 'time')
    .option('--phase <phase>', 'only one phase: preprocess, forward, postprocess, dataload, backward, ...')
    .addOption(jsonOption())
    .action(lazyAction(async () => (await import('../actions/profile.ts')).kernels)));
  group.addCommand(readerCommand('ops', 'The host view: ORT session ops and the package\'s own spans, by CPU time.')
    .option('--top <n>', 'show the first N', parseIntegerAtLeast('--top', 0), 20)
    .option('--phase <phase>', 'only one phase')
    .addOption(jsonOption())
    .action(lazyAction(async () => (await import('../actions/profile.ts')).ops)));
  group.addCommand(new Command('compare')
    .description('Before -> after: img/s (with a significance call when both were repeated), ms/image, utilisation, host overhead, launches, verdict.')
    .argument('<before>', 'reference profile').argument('<after>', 'new profile')
    .option('--html <file>', "also write both profiles' panels and the deltas side by side as a self-contained HTML page")
    .addOption(jsonOption())
    .action(lazyAction(async () => (await import('../actions/profile.ts')).compare)));
  group.addCommand(readerCommand('report', "Write timeline.html for a profile: the trace's timeline and the verdict panel, self-contained.")
    .option('--out <file>', 'where to write it (default: timeline.html beside the profile, never replacing one)')
    .addOption(jsonOption())
    .action(lazyAction(async () => (await import('../actions/profile.ts')).report)));
  group.addCommand(readerCommand('what-if', 'Estimate what removing a kernel category or N launches per step would gain.')
    .option('--remove-category <substring>', 'project removing a kernel category: gemm, layout, norm, elementwise, pool')
    .option('--remove-launches <n>', 'project removing N kernel launches per step (e.g. an op fusion)', parseIntegerAtLeast('--remove-launches', 0))
    .addOption(jsonOption())
    .action(lazyAction(async () => (await import('../actions/profile.ts')).whatIf)));
  return group;
}
