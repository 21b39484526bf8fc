/** The RF-DETR n fixture set (../shared/fixtures/rfdetrn_ref*): inputs as the original normalises them, and its noise floors. */
import { readFileSync } from 'node:fs';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { fixture } from './fixtures.ts';

export const RFDETR_SHAPES = ['1x3x384x384', '2x3x320x256'] as const;

export function readRfdetrIo(): { tensors: Map<string, HostTensor>; metadata: Record<string, string> } {
  const st = readSafetensors(new Uint8Array(readFileSync(fixture('rfdetrn_ref_io.safetensors'))), 'rfdetr io fixture');
  return { tensors: st.tensors, metadata: st.metadata };
}

/** The fixture's formula, each step rounded to float32: x = u8 / 255; (x - mean) / std, ImageNet mean/std, NCHW. */
export function normalizeU8(u8: HostTensor): HostTensor {
  const mean = [0.485, 0.456, 0.406].map(Math.fround);
  const std = [0.229, 0.224, 0.225].map(Math.fround);
  const [, , h, w] = u8.dims as [number, number, number, number];
  const src = u8.data as Uint8Array;
  const out = new Float32Array(src.length);
  for (let k = 0; k < out.length; k++) {
    const c = Math.floor(k / (h * w)) % 3;
    out[k] = Math.fround(Math.fround(Math.fround(src[k]! / 255) - mean[c]!) / std[c]!);
  }
  return { dtype: 'float32', dims: [...u8.dims], data: out };
}

/**
 * Tolerances: twice the original's float32-vs-float64 difference per tensor (rfdetr.md 8.3 for the
 * taps; the io file's `fp32_vs_fp64` metadata for the final outputs, read at run time).
 */
export function rfdetrTolerances(metadata: Record<string, string>): Record<string, number> {
  const floor = JSON.parse(metadata.fp32_vs_fp64 ?? 'null') as { pred_logits: { max_abs: number }; pred_boxes: { max_abs: number } } | null;
  if (!floor) throw new Error('rfdetrn_ref_io.safetensors has no fp32_vs_fp64 metadata');
  return {
    pos_embed: 2e-7,
    dino_stage: 2 * 5.3e-6,
    projector_p4: 2 * 1.8e-5,
    enc_token_maxlogit: 2 * 1.3e-5,
    enc_pred_logits: 2 * 1.3e-5,
    enc_pred_boxes: 2 * 4e-8,
    aux0_pred_logits: 2 * 7.7e-6,
    aux0_pred_boxes: 2 * floor.pred_boxes.max_abs,
    pred_logits: 2 * floor.pred_logits.max_abs,
    pred_boxes: 2 * floor.pred_boxes.max_abs,
  };
}

export { maxAbsDiff, nearTieSlots, nearTieSwaps } from './detr-rows.ts';
