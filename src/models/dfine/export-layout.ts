/**
 * D-FINE's export layout (the original's: `pred_logits` [B, 300, nc] raw logits, `pred_boxes`
 * [B, 300, 4] cx, cy, w, h normalised) recognised without metadata and read back into the predict
 * layout [B, 4+nc, 300] with the predict graph's own decode (w, h clamped at 0, sigmoid scores).
 */
import { LibreYOLOError } from '../../errors.ts';
import type { HostTensor } from '../../graph/tensor.ts';
import { queriesToPredictLayout } from '../detr/query-layout.ts';
import { DFINE_COMMON as C } from './config.ts';

/** nc when the file's outputs are the original's pair, `pred_logits` [B, 300, nc] and `pred_boxes` [B, 300, 4]; else null. */
export function dfineExportClassCount(outputs: Readonly<Record<string, readonly number[]>>): number | null {
  const logits = outputs.pred_logits;
  const boxes = outputs.pred_boxes;
  if (!logits || !boxes || logits.length !== 3 || boxes.length !== 3) return null;
  if (logits[1] !== C.numQueries || boxes[1] !== C.numQueries || boxes[2] !== 4 || logits[0] !== boxes[0]) return null;
  return logits[2]! >= 1 ? logits[2]! : null;
}

export function dfineExportToPredict(output: HostTensor, context: { extra: Record<string, HostTensor>; inputDims: readonly number[] }): HostTensor {
  const all: Record<string, HostTensor> = { ...context.extra };
  const boxes = all.pred_boxes;
  // The engine hands the first output as `output`: the logits in the original's order.
  const logits = all.pred_logits ?? output;
  if (!boxes || boxes.dims.length !== 3 || boxes.dims[2] !== 4 || logits.dims.length !== 3 || logits.dims[1] !== boxes.dims[1]) {
    const got = [output, ...Object.values(context.extra)].map((t) => `[${t.dims.join(', ')}]`).join(', ');
    throw new LibreYOLOError('model_load_failed', `A D-FINE export has outputs pred_logits [B, 300, nc] and pred_boxes [B, 300, 4]; got ${got}.`);
  }
  return queriesToPredictLayout(boxes, logits, context.inputDims, { clampSize: true });
}
