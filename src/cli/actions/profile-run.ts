/** What `libreyolo profile run` does once its flags are parsed (imported only when it runs). */
import type { Command } from 'commander';
import { cliInvocation } from '../invocation.ts';
import { pyF, pyJson } from '../../profile/pyfmt.ts';
import { runTrainProfile } from '../../app/profile-run.ts';
import { CliExit, reportError } from '../report.ts';
import { raisedToFloor } from '../values.ts';

export interface RunFlags {
  weights: string; size: string; batch: number; imgsz: number; workers: number; amp: boolean; steps: number; warmup: number;
  repeat: number; device: string; project: string; threads?: number; json: boolean;
}

export async function runProfileTrain(data: string, f: RunFlags, cmd: Command): Promise<void> {
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
}
