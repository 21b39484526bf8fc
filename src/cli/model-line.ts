/** The line commands print to say which model runs: family, size, classes, weights, input, device. */
import type { LibreYOLOModel } from '../model.ts';

export function modelLine(model: LibreYOLOModel): string {
  const params = model.parameterCount();
  const what = [`${model.family.displayName} ${model.size}`, `${model.nc} classes`, ...(params ? [`${params.toLocaleString('en-US')} parameters`] : [])];
  const [h, w] = model.imgsz;
  return `Model: ${model.family.name}-${model.size} (${what.join(', ')}) from ${model.weightsPath ?? 'fresh weights'}, input ${h}x${w}, device ${model.device.id}`;
}
