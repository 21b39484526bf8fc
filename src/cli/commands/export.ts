/** `libreyolo export model=... format=onnx dynamic=true imgsz=640 batch=1` */
import { Command, Option } from 'commander';
import { listFamilies } from '../../models/index.ts';
import { EXPORT_OPTIONS } from '../../export/options.ts';
import { addTableFlags } from '../option-flags.ts';
import { lazyAction } from '../lazy-action.ts';
import { DEFAULT_PREDICT_MODEL } from './predict.ts';

/** `RF-DETR, D-FINE`: the display names of the families whose `pick` is true. */
function familiesWhere(pick: (f: ReturnType<typeof listFamilies>[number]) => boolean): string {
  return listFamilies().filter(pick).map((f) => f.displayName).join(', ');
}

export function exportCommand(): Command {
  const opsets = listFamilies().filter((f) => f.exportOpset).map((f) => `${f.exportOpset} for ${f.displayName}`).join(', ');
  const fixedSize = familiesWhere((f) => f.staticExportSize === true);
  const cmd = new Command('export')
    .description("Export a model to ONNX in its family's layout as the original exports it (YOLOv9: images [B,3,H,W] -> output [B,4+nc,anchors]), with LibreYOLO metadata.")
    .option('--model <weights>', 'weights to export', DEFAULT_PREDICT_MODEL);
  // The flags, their help and their checks come from the library's table; two help lines name the families.
  addTableFlags(cmd, {
    ...EXPORT_OPTIONS,
    dynamic: { ...EXPORT_OPTIONS.dynamic, help: `free batch, height and width (batch only for ${fixedSize})` },
    opset: { ...EXPORT_OPTIONS.opset, help: `ONNX opset (default and minimum 13; ${opsets})` },
  });
  cmd.addOption(new Option('--json', 'print one JSON object (the exported file) on stdout').default(false));
  return cmd.action(lazyAction(async () => (await import('../actions/export.ts')).runExport));
}
