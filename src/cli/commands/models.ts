/** `libreyolo models`: every registered family with its sizes, names and default input sizes. */
import { Command } from 'commander';
import { familyImgsz, familySizes, familySizeTask, familyTasks, listFamilies } from '../../models/index.ts';
import { printResult, withOutputFlags, type OutputFlags } from '../output.ts';

export function modelFamiliesReport(): Array<Record<string, unknown>> {
  return listFamilies().map((f) => ({
    name: f.name,
    display_name: f.displayName,
    sizes: [...f.sizes],
    // A size only one task builds (RF-DETR-seg x, xx) shows that task's input.
    default_imgsz: Object.fromEntries(f.sizes.map((s) => [s, familyImgsz(f, s, familySizeTask(f, s))])),
    // The sizes of each task (RF-DETR-seg adds x, xx).
    task_sizes: Object.fromEntries(familyTasks(f).map((t) => [t, [...familySizes(f, t)]])),
    // `yolo9-t`: fresh weights for train and profile; the published weights load by file name.
    cli_names: f.sizes.map((s) => `${f.name}-${s}`),
    weights: familySizes(f).map((s) => `${f.filenamePrefix}${s}.pt`),
    trainable: Boolean(f.train),
  }));
}

export function modelsCommand(): Command {
  return withOutputFlags(new Command('models').description('List the model families, their sizes, CLI names, published weights and input sizes.'))
    .action((flags: OutputFlags) => {
      const families = modelFamiliesReport();
      printResult({ families }, flags, () => ['Available models:', '', ...families.flatMap((f) => {
        const sizes = f.sizes as string[];
        const imgsz = f.default_imgsz as Record<string, number>;
        return [
          `  ${String(f.name)} (${String(f.display_name)}${f.trainable ? ', trainable' : ''}):`,
          `    Sizes:   ${sizes.join(', ')}`,
          `    Names:   ${(f.cli_names as string[]).join(', ')}`,
          `    Weights: ${(f.weights as string[]).join(', ')}`,
          `    Input:   ${sizes.map((s) => `${s}=${imgsz[s]}`).join(', ')}`,
          '',
        ];
      })].join('\n'));
    });
}
