/**
 * `libreyolo profile run <data>`: profile training. POSIX flags like the rest of
 * the profile group. Exit codes: 3 when a trial's window never filled (no profile.json), 2 for an
 * argument that does not resolve, 1 otherwise.
 */
import { Command, Option } from 'commander';
import { cliInvocation } from '../invocation.ts';
import { pyF, pyJson } from '../../profile/pyfmt.ts';
import { runTrainProfile } from '../../app/profile-run.ts';
import { CliExit, reportError } from '../report.ts';
import { parseInteger, parseIntegerAtLeast, raisedToFloor } from '../values.ts';

interface RunFlags {
  weights: string; size: string; batch: number; imgsz: number; workers: number; amp: boolean; steps: number; warmup: number;
  repeat: number; device: string; project: string; threads?: number; json: boolean;
}

export function profileRunCommand(): Command {
  return new Command('run')
    .description('Profile training: a few train steps with the trainer (model.train({ profile: true })), written as a profile.')
    .argument('<data>', 'dataset yaml or name, e.g. coco128')
    .option('--weights <weights>', 'weights to train from (a family and size such as yolo9t: fresh weights)', 'LibreYOLO9t.pt')
    .option('--size <size>', 'model size variant', 't')
    .option('--batch <n>', 'batch size (-1 = auto-fit to the memory budget)', parseIntegerAtLeast('--batch', 1, -1), 16)
    .option('--imgsz <n>', 'train image size', parseInteger('imgsz'), 640)
    .option('--workers <n>', 'data loader workers', parseIntegerAtLeast('--workers', 0), 8)
    .option('--amp', 'mixed precision (GPU providers; ignored on CPU)', true)
    .option('--no-amp', 'float32')
    .option('--steps <n>', 'measured steps', parseInteger('steps'), 20)
    .option('--warmup <n>', 'warmup steps (discarded)', parseInteger('warmup'), 5)
    .option('--repeat <n>', 'repeat N times for a mean and standard deviation', parseInteger('repeat'), 1)
    .option('--device <device>', 'device: 0 / cuda:0 (CUDA), cpu, webgpu', '0')
    .option('--project <dir>', 'output root', 'runs/profile')
    .option('--threads <n>', 'ONNX Runtime intra-op threads (default: all cores)', parseIntegerAtLeast('--threads', 1))
    .addOption(new Option('--json', 'JSON on stdout').default(false))
    .action(async (data: string, f: RunFlags, cmd: Command) => {
      const warn = (m: string): void => void process.stderr.write(`Warning: ${m}\n`);
      // The original's floors, said out loud: the window measures at least 2 steps, one trial.
      f.warmup = raisedToFloor('--warmup', f.warmup, 0, warn);
      f.steps = raisedToFloor('--steps', f.steps, 2, warn);
      f.repeat = raisedToFloor('--repeat', f.repeat, 1, warn);
      try {
        const { profilePath, profile: a, tracePath } = await runTrainProfile({
          data, weights: f.weights, weightsFromDefault: cmd.getOptionValueSource('weights') === 'default', size: f.size, batch: f.batch, imgsz: f.imgsz, workers: f.workers, amp: f.amp,
          steps: f.steps, warmup: f.warmup, repeat: f.repeat, device: f.device, project: f.project,
          ...(f.threads ? { threads: f.threads } : {}),
          log: (line) => process.stderr.write(`${line}\n`),
          warn,
        });
        const n = a.img_per_s_n ?? 1;
        if (f.json) {
          process.stdout.write(`${pyJson({
            profile: profilePath, trace: tracePath, img_per_s: a.img_per_s, img_per_s_std: a.img_per_s_std ?? null,
            img_per_s_n: n, bound: a.bound, gpu_util: a.gpu_util,
          }, 2)}\n`);
          return;
        }
        const spread = n > 1 ? ` +/- ${pyF(a.img_per_s_std)} (n=${n})` : '';
        process.stdout.write(`img/s: ${pyF(a.img_per_s)}${spread}  |  ${a.bound}\nprofile: ${profilePath}\nnext:    ${cliInvocation()} profile summary ${profilePath}\n`);
      } catch (err) {
        // As the whole profile group (cli/main.ts): errors are one stderr line, also with --json.
        throw new CliExit(reportError(err, false));
      }
    });
}
