/** What `libreyolo export` does once its flags are parsed (imported only when it runs). */
import { LibreYOLO } from '../../load.ts';
import { EXPORT_OPTIONS } from '../../export/options.ts';
import { tableValues } from '../option-flags.ts';

export async function runExport(flags: Record<string, unknown>): Promise<void> {
  const model = await LibreYOLO(String(flags.model));
  try {
    const path = await model.export({ format: 'onnx', ...tableValues(flags, EXPORT_OPTIONS) });
    if (flags.json === true) process.stdout.write(`${JSON.stringify({ schema_version: 1, model_family: model.family.name, model_size: model.size, output_path: path })}\n`);
    else process.stdout.write(`Exported ${model.family.name}-${model.size} to ${path}\n`);
  } finally {
    await model.close();
  }
}
