/** The line commands print to say which model runs: family, size, classes, weights, input, device. */
import type { LibreYOLOModel } from '../model.ts';
import { normalizeImgsz } from '../util/imgsz.ts';
import { familyImgszStride } from '../models/registry.ts';

/** `imgsz`: the command's own input size, if given (rounded as predict rounds it, without its warning). */
export function modelLine(model: LibreYOLOModel, imgsz?: number | [number, number]): string {
  const params = model.parameterCount();
  const what = [`${model.family.displayName} ${model.size}`, ...(model.task !== 'detect' ? [model.task] : []), `${model.nc} classes`, ...(params ? [`${params.toLocaleString('en-US')} parameters`] : [])];
  const [h, w] = (imgsz === undefined ? null : normalizeImgsz(imgsz, familyImgszStride(model.family, model.size, model.task), () => undefined)) ?? model.imgsz;
  return `Model: ${model.family.name}-${model.size} (${what.join(', ')}) from ${model.weightsPath ?? 'fresh weights'}, input ${h}x${w}, device ${model.device.id}`;
}
