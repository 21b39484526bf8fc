/**
 * `libreyolo checks`: the environment for bug reports: Node, ONNX Runtime and each execution provider
 * (available or not, and why), sharp/libvips, ffmpeg, NVIDIA GPUs, and the installed dependencies.
 */
import { Command } from 'commander';
import { lazyAction } from '../lazy-action.ts';
import { withOutputFlags } from '../output.ts';

export function checksCommand(): Command {
  return withOutputFlags(new Command('checks').description('Report the runtime environment: Node, ONNX Runtime and its execution providers, sharp/libvips, ffmpeg, GPUs, packages.'))
    .action(lazyAction(async () => (await import('../actions/checks.ts')).runChecks));
}
