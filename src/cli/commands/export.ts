/** `libreyolo export model=... format=onnx dynamic=true imgsz=640 batch=1` */
import { Command } from 'commander';
import { LibreYOLO } from '../../load.ts';
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
}

export function exportCommand(): Command {
  return new Command('export')
    .description('Export a model to ONNX (input images [B,3,H,W], output [B,4+nc,anchors], LibreYOLO metadata).')
    .option('--model <weights>', 'weights to export', DEFAULT_PREDICT_MODEL)
    .option('--format <format>', 'export format (onnx)', 'onnx')
    .option('--imgsz <size>', 'input size: 640 or 480x640', parseImgsz)
    .option('--batch <n>', 'static batch size', parseInteger('batch'), 1)
    .option('--dynamic', 'free batch, height and width', false)
    .option('--no-dynamic', 'fixed input shape')
    .option('--half', 'float16 weights and compute', false)
    .option('--opset <n>', "ONNX opset (default 13, or the family's minimum: 17 for RF-DETR)", parseInteger('opset'))
    .option('--output-path <path>', 'output file (default: next to the weights)')
    .action(async (flags: ExportFlags) => {
      const model = await LibreYOLO(flags.model);
      try {
        const path = await model.export({
          format: flags.format, batch: flags.batch, dynamic: flags.dynamic, half: flags.half,
          ...(flags.opset !== undefined ? { opset: flags.opset } : {}),
          ...(flags.imgsz !== undefined ? { imgsz: flags.imgsz } : {}),
          ...(flags.outputPath ? { output_path: flags.outputPath } : {}),
        });
        process.stdout.write(`Exported ${model.family.name}-${model.size} to ${path}\n`);
      } finally {
        await model.close();
      }
    });
}
