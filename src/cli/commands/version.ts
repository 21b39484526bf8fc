/** `libreyolo version`: the package version and what it runs on (Node, ONNX Runtime, libvips). */
import { Command } from 'commander';
import { lazyAction } from '../lazy-action.ts';
import { withOutputFlags } from '../output.ts';

export function versionCommand(): Command {
  return withOutputFlags(new Command('version').description('Print the libreyolo version and the Node, ONNX Runtime and libvips versions.'))
    .action(lazyAction(async () => (await import('../actions/version.ts')).runVersion));
}
