/**
 * RF-DETR's head re-initialisation for a new class count: the rows of `class_embed` and of every
 * two-stage `transformer.enc_out_class_embed.{g}` are tiled (row r takes old row r mod K) or
 * truncated to nc + 1 rows; every other tensor is kept as it is. A COCO head fine-tuned to 3
 * classes keeps its rows 0..3.
 */
import { LibreYOLOError } from '../../errors.ts';
import type { HostTensor } from '../../graph/tensor.ts';

const CLASS_HEAD = /^(class_embed|transformer\.enc_out_class_embed\.\d+)\.(weight|bias)$/;

/** Whether `key` is a class-head weight or bias that `resizeClassHeads` resizes. */
export const isClassHeadKey = (key: string): boolean => CLASS_HEAD.test(key);

/** A copy of `stateDict` with each class head's rows tiled or truncated to nc + 1 (the other entries shared, not copied). */
export function resizeClassHeads(stateDict: ReadonlyMap<string, HostTensor>, nc: number): Map<string, HostTensor> {
  if (!Number.isInteger(nc) || nc < 1) throw new LibreYOLOError('config_range_error', `RF-DETR head re-initialisation needs nc >= 1, got ${nc}`);
  const rows = nc + 1;
  const out = new Map<string, HostTensor>();
  let heads = 0;
  for (const [key, t] of stateDict) {
    if (!isClassHeadKey(key)) { out.set(key, t); continue; }
    const old = t.dims[0];
    if (old === undefined || old < 1 || t.dims.length > 2 || !(t.data instanceof Float32Array)) {
      throw new LibreYOLOError('model_load_failed', `${key} is not a float32 class head of [K] or [K, D] (dims [${t.dims.join(', ')}], ${t.dtype})`);
    }
    const width = t.dims.length === 2 ? t.dims[1]! : 1;
    const data = new Float32Array(rows * width);
    for (let r = 0; r < rows; r++) data.set(t.data.subarray((r % old) * width, (r % old + 1) * width), r * width);
    out.set(key, { dtype: 'float32', dims: t.dims.length === 2 ? [rows, width] : [rows], data });
    heads++;
  }
  if (!stateDict.has('class_embed.bias') || heads === 0) throw new LibreYOLOError('model_load_failed', 'The state dict has no RF-DETR class head (class_embed.bias is missing).');
  return out;
}
