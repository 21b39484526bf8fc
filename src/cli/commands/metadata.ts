/**
 * `libreyolo metadata --path <file>`: what a checkpoint (.pt, .safetensors) or an exported .onnx says
 * about itself, read without building a model, and whether it carries LibreYOLO's required keys.
 * Missing required keys or unreadable metadata exit 1; a missing file is a clear error (exit 4).
 */
import { Command } from 'commander';
import { lazyAction } from '../lazy-action.ts';
import { withOutputFlags } from '../output.ts';

export function metadataCommand(): Command {
  return withOutputFlags(new Command('metadata').description('Show what a checkpoint (.pt, .safetensors) or exported .onnx declares about itself, without building a model.'))
    .argument('[path]', 'the file (same as --path)')
    .option('--path <file>', 'checkpoint or exported ONNX file')
    .action(lazyAction(async () => (await import('../actions/metadata.ts')).runMetadata));
}
