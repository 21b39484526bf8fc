/**
 * `libreyolo info --model <name|path> [--detailed]`: what a model is (family, size, classes, input
 * size, parameter counts) after loading it on the CPU. `yolo9-t` style names describe fresh weights.
 */
import { Command } from 'commander';
import { lazyAction } from '../lazy-action.ts';
import { withOutputFlags } from '../output.ts';
import { DEFAULT_PREDICT_MODEL } from './predict.ts';

export function infoCommand(): Command {
  return withOutputFlags(new Command('info').description('Describe a model: family, size, classes, input size, parameter counts (loaded on the CPU).'))
    .option('--model <weights>', 'weights path, published name, or a family-size name such as yolo9-t (fresh weights)', DEFAULT_PREDICT_MODEL)
    .option('--detailed', 'list every parameter tensor', false)
    .action(lazyAction(async () => (await import('../actions/info.ts')).runInfo));
}
