/** `libreyolo export model=... format=onnx dynamic=true imgsz=640 batch=1` */
import { Command } from 'commander';
import { LibreYOLO } from '../../load.ts';
import { listFamilies } from '../../models/index.ts';
import { parseImgsz, parseInteger } from '../values.ts';
import { DEFAULT_PREDICT_MODEL } from './predict.ts';

interface ExportFlags {
  model: string;
  format: string;
  imgsz?: number | [number, number];
  batch: number;
  dynamic: boolean;
  half: boolean;
  opset?: number;
  outputPath?: string;
  overwrite: boolean;
}

/** `RF-DETR, D-FINE`: the display names of the families whose `pick` is true. */
function familiesWhere(pick: (f: ReturnType<typeof listFamilies>[number]) => boolean): string {
  return listFamilies().filter(pick).map((f) => f.displayName).join(', ');
}

export function exportCommand(): Command {
  const opsets = listFamilies().filter((f) => f.exportOpset).map((f) => `${f.exportOpset} for ${f.displayName}`).join(', ');
  const fixedSize = familiesWhere((f) => f.staticExportSize === true);
  return new Command('export')
    .description("Export a model to ONNX in its family's layout as the original exports it (YOLOv9: images [B,3,H,W] -> output [B,4+nc,anchors]), with LibreYOLO metadata.")
    .option('--model <weights>', 'weights to export', DEFAULT_PREDICT_MODEL)
    .option('--format <format>', 'export format (onnx)', 'onnx')
    .option('--imgsz <size>', 'input size: 640 or 480x640', parseImgsz)
    .option('--batch <n>', 'static batch size', parseInteger('batch'), 1)
    .option('--dynamic', `free batch, height and width (batch only for ${fixedSize})`, false)
    .option('--no-dynamic', 'fixed input shape')
    .option('--half', 'float16 weights and compute', false)
    .option('--opset <n>', `ONNX opset (default and minimum 13; ${opsets})`, parseInteger('opset'))
    .option('--output-path <path>', 'output file (default: next to the weights; an existing file is kept and the export takes the next free name)')
    .option('--overwrite', 'replace an existing file at the output path', false)
    .action(async (flags: ExportFlags) => {
      const model = await LibreYOLO(flags.model);
      try {
        const path = await model.export({
          format: flags.format, batch: flags.batch, dynamic: flags.dynamic, half: flags.half,
          ...(flags.opset !== undefined ? { opset: flags.opset } : {}),
          ...(flags.imgsz !== undefined ? { imgsz: flags.imgsz } : {}),
          ...(flags.outputPath ? { output_path: flags.outputPath } : {}),
          ...(flags.overwrite ? { overwrite: true } : {}),
        });
        process.stdout.write(`Exported ${model.family.name}-${model.size} to ${path}\n`);
      } finally {
        await model.close();
      }
    });
}
