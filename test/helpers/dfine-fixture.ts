/** The dfinen_ref_io (and deimn_ref_io) fixture for tests through the library: inputs, the 2x-floor limits, predict-layout pairing, the photo's detections. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { dfineExportToPredict } from '../../src/models/dfine/export-layout.ts';
import type { Results } from '../../src/predict/results.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { assertSameDetectionSet } from './detr-rows.ts';
import { fixture } from './fixtures.ts';

export const DFINE_SHAPES = ['1x3x640x640', '2x3x640x640'] as const;

export interface DfineIo { tensors: Map<string, HostTensor>; floor: { pred_logits: { max_abs: number }; pred_boxes: { max_abs: number } } }

/** `stem`: the fixture (dfinen_ref, or deimn_ref: the same layout). */
export function readDfineIo(stem = 'dfinen_ref'): DfineIo {
  const st = readSafetensors(new Uint8Array(readFileSync(fixture(`${stem}_io.safetensors`))), `${stem} io fixture`);
  const floor = JSON.parse(st.metadata.fp32_vs_fp64 ?? 'null');
  assert.ok(floor, `${stem}_io.safetensors has fp32_vs_fp64 metadata`);
  return { tensors: st.tensors, floor };
}

export function inputOf(io: DfineIo, shape: string): HostTensor {
  const u8 = io.tensors.get(`input_u8_${shape}`)!;
  return { dtype: 'float32', dims: u8.dims, data: Float32Array.from(u8.data as Uint8Array, (v) => Math.fround(v / 255)) };
}

/**
 * Max box (px) and score differences of a predict-layout output [B, 4+nc, Q] against the
 * reference's pred_logits/pred_boxes in the same layout, each of our query rows paired with the
 * reference row of the nearest box (a bijection is required): a near-tie swap in the proposal
 * top-k permutes rows, nothing else.
 */
export function predictLayoutErrors(got: HostTensor, io: DfineIo, shape: string): { box: number; score: number; moved: number } {
  const want = dfineExportToPredict(io.tensors.get(`pred_logits_${shape}`)!, { extra: { pred_boxes: io.tensors.get(`pred_boxes_${shape}`)! }, inputDims: [0, 3, 640, 640] });
  assert.deepEqual(got.dims, want.dims);
  const [b, rows, q] = want.dims as [number, number, number];
  const a = got.data as Float32Array, e = want.data as Float32Array;
  let box = 0, score = 0, moved = 0;
  for (let i = 0; i < b; i++) {
    const base = i * rows * q;
    const used = new Set<number>();
    for (let j = 0; j < q; j++) {
      let best = -1, bestD = Infinity;
      for (let r = 0; r < q; r++) {
        if (used.has(r)) continue;
        let d = 0;
        for (let c = 0; c < 4; c++) d = Math.max(d, Math.abs(a[base + c * q + j]! - e[base + c * q + r]!));
        if (d < bestD) { bestD = d; best = r; }
      }
      used.add(best);
      if (best !== j) moved++;
      box = Math.max(box, bestD);
      for (let c = 4; c < rows; c++) score = Math.max(score, Math.abs(a[base + c * q + j]! - e[base + c * q + best]!));
    }
  }
  return { box, score, moved };
}

/** The 2x-floor limits (dfine.md 7.1) in the predict layout: boxes x 640 x 2 (two edges), sigmoid slope <= 1/4. */
export const limitsOf = (io: DfineIo): { box: number; score: number } => ({ box: 2 * io.floor.pred_boxes.max_abs * 640 * 2, score: (2 * io.floor.pred_logits.max_abs) / 4 });

export const detectionsOf = (r: Results) => ({ xyxy: r.boxes.xyxyData, conf: r.boxes.confData, cls: r.boxes.clsData });

export function assertPhotoDetections(r: Results, io: DfineIo, scoreTol = 1e-4): void {
  assertSameDetectionSet(detectionsOf(r), io.tensors.get('image_det_boxes_xyxy')!.data as Float32Array, io.tensors.get('image_det_scores')!.data as Float32Array,
    io.tensors.get('image_det_classes')!.data as BigInt64Array, 1e-3, scoreTol);
}
