/** What `libreyolo val` does once its flags are parsed (imported only when it runs). */
import { modelLine } from '../model-line.ts';
import { checkSplitName } from '../../data/dataset.ts';
import { LibreYOLOError } from '../../errors.ts';
import { LibreYOLO } from '../../load.ts';
import { formatMetrics, validate } from '../../val/validate.ts';
import { checkRange } from '../values.ts';

export interface ValFlags {
  model: string;
  data?: string;
  split: 'train' | 'val' | 'test';
  imgsz?: number | [number, number];
  batch: number;
  conf: number;
  iou: number;
  maxDet: number;
  device: string;
  workers?: string;
  json: boolean;
}

export async function runVal(flags: ValFlags): Promise<void> {
  // Said as train says it: key=value users never typed --data.
  if (!flags.data) throw new LibreYOLOError('config_required_key', 'val: data is required (a dataset YAML path or a built-in name such as coco8).');
  if (flags.workers !== undefined) {
    throw new LibreYOLOError('config_unsupported', `val: workers=${flags.workers} is not supported: validation decodes its images in the command's own process, with no worker pool to size. Leave workers out.`);
  }
  checkSplitName(flags.split);
  checkRange('conf', flags.conf, 0, 1);
  checkRange('iou', flags.iou, 0, 1);
  checkRange('batch', flags.batch, 1);
  checkRange('max_det', flags.maxDet, 1);
  const model = await LibreYOLO(flags.model, { device: flags.device });
  const tty = Boolean(process.stderr.isTTY);
  try {
    const r = await validate(model, flags.data, {
      split: flags.split, conf: flags.conf, iou: flags.iou, max_det: flags.maxDet, batch: flags.batch,
      ...(flags.imgsz !== undefined ? { imgsz: flags.imgsz } : {}),
      onProgress: (done, total) => {
        // A terminal redraws one line; a log file or pipe gets the final count only, not a run of \r-joined counts.
        if (!flags.json && (tty || done === total)) process.stderr.write(`${tty ? '\r' : ''}val ${done}/${total} images${tty ? '' : '\n'}`);
      },
    });
    if (!flags.json && tty) process.stderr.write('\n');
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ schema_version: 1, model: flags.model, model_family: model.family.name, model_size: model.size, data: flags.data, split: flags.split, images: r.images, instances: r.instances, seconds: r.seconds, metrics: r.metrics })}\n`);
    } else {
      process.stdout.write(`${modelLine(model, flags.imgsz)}\n${formatMetrics(r)}  (${r.seconds.toFixed(1)}s)\n`);
    }
  } finally {
    await model.close();
  }
}
