/** `libreyolo formats`: the export formats, their file extension and precisions. */
import { Command } from 'commander';
import { EXPORT_FORMATS } from '../../export/formats.ts';
import { printResult, withOutputFlags, type OutputFlags } from '../output.ts';

const py = (b: boolean): string => (b ? 'True' : 'False');

export function formatsCommand(): Command {
  return withOutputFlags(new Command('formats').description('List the export formats (extension, FP16, INT8).'))
    .action((flags: OutputFlags) => {
      const formats = [...EXPORT_FORMATS].sort((a, b) => a.name.localeCompare(b.name));
      printResult({ formats }, flags, () => ['Supported export formats:', '', ...formats.flatMap((f) => [
        `  ${f.name}${f.aliases?.length ? ` (alias: ${f.aliases.join(', ')})` : ''}`,
        `    Extension: ${f.extension}, FP16: ${py(f.fp16)}, INT8: ${py(f.int8)}`,
      ])].join('\n'));
    });
}
