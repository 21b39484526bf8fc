/**
 * The DETR export layout read back into the predict layout, shared by RF-DETR and D-FINE: per-query
 * boxes [B, Q, 4] (cx, cy, w, h normalised to the input) and raw logits [B, Q, K] become
 * [B, 4+K, Q] (x1, y1, x2, y2 in input pixels, sigmoid scores), each step rounded to float32 as the
 * predict graphs' own decode does.
 */
import { asFloat32, type HostTensor } from '../../graph/tensor.ts';

export interface QueryLayoutOptions {
  /** Clamp w and h at 0 first (D-FINE's decode does; RF-DETR's does not). */
  clampSize: boolean;
}

export function queriesToPredictLayout(boxes: HostTensor, logits: HostTensor, inputDims: readonly number[], options: QueryLayoutOptions): HostTensor {
  const [b, q] = boxes.dims as [number, number];
  const k = logits.dims[2]!;
  const [, , h, w] = inputDims as [number, number, number, number];
  // A half export's outputs arrive as float16.
  const bd = asFloat32(boxes);
  const ld = asFloat32(logits);
  const size = options.clampSize ? (v: number) => Math.max(v, 0) : (v: number) => v;
  const rows = 4 + k;
  const out = new Float32Array(b * rows * q);
  const f = Math.fround;
  for (let i = 0; i < b; i++) for (let j = 0; j < q; j++) {
    const s = (i * q + j) * 4;
    const hw = f(size(bd[s + 2]!) * 0.5), hh = f(size(bd[s + 3]!) * 0.5);
    const o = i * rows * q + j;
    out[o] = f(f(bd[s]! - hw) * w);
    out[o + q] = f(f(bd[s + 1]! - hh) * h);
    out[o + 2 * q] = f(f(bd[s]! + hw) * w);
    out[o + 3 * q] = f(f(bd[s + 1]! + hh) * h);
    for (let c = 0; c < k; c++) out[o + (4 + c) * q] = 1 / (1 + Math.exp(-ld[(i * q + j) * k + c]!));
  }
  return { dtype: 'float32', dims: [b, rows, q], data: out };
}
