/** `libreyolo val model=... data=... split=val imgsz=... batch=16 conf=0.001 iou=0.6` */
import { Command } from 'commander';
import { lazyAction } from '../lazy-action.ts';
import { parseImgsz, parseInteger, parseNumber } from '../values.ts';
import { DEFAULT_PREDICT_MODEL } from './predict.ts';

export function valCommand(): Command {
  return new Command('val')
    .description("Validate a model on a dataset: COCO-style mAP50, mAP50-95, mAP75 and AR100 (--json also has the original's metrics/precision and metrics/recall keys, which are mAP50-95 and AR100 by its definition).")
    .option('--data <yaml>', 'dataset YAML, folder with data.yaml, or a known name (coco8, coco128)')
    .option('--model <weights>', 'weights to validate', DEFAULT_PREDICT_MODEL)
    .option('--split <split>', 'train, val or test', 'val')
    .option('--imgsz <size>', 'input size (default: the model\'s)', parseImgsz)
    .option('--batch <n>', 'images per forward pass', parseInteger('batch'), 16)
    .option('--conf <number>', 'confidence threshold', parseNumber('conf'), 0.001)
    .option('--iou <number>', 'NMS IoU threshold', parseNumber('iou'), 0.6)
    .option('--max-det <n>', 'detections kept per image', parseInteger('max_det'), 300)
    .option('--device <device>', 'cpu, 0 / cuda:0, or webgpu', 'cpu')
    .option('--workers <n>', 'not supported: val decodes its images in the command\'s own process (refused)')
    .option('--json', 'print one JSON object', false)
    .action(lazyAction(async () => (await import('../actions/val.ts')).runVal));
}
