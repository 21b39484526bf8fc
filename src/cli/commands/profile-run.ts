/**
 * `libreyolo profile run <data>`: profile training. POSIX flags like the rest of
 * the profile group. Exit codes: 3 when a trial's window never filled (no profile.json), 2 for an
 * argument that does not resolve, 1 otherwise.
 */
import { Command, Option } from 'commander';
import { lazyAction } from '../lazy-action.ts';
import { parseInteger, parseIntegerAtLeast } from '../values.ts';

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
    .action(lazyAction(async () => (await import('../actions/profile-run.ts')).runProfileTrain));
}
