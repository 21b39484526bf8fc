/**
 * RF-DETR-seg masks (segmentation.md 3.5): the mask logits `[B, Q, H/4, W/4]` of each selected query
 * (once per pick, so a query picked for two classes gives the same mask twice), resized bilinearly
 * (align_corners=False) straight to the original size (the input is a stretch, nothing to un-pad),
 * then logit > 0. No box crop.
 */
import { bilinearTaps, resampleWindow, thresholdWindow } from '../../data/masks/resize.ts';
import { RunBuilder } from '../../data/masks/rle.ts';
import { LibreYOLOError } from '../../errors.ts';
import type { MaskInputs, MaskSet, SegmentHooks } from '../registry.ts';

function masks(inputs: MaskInputs, source: Int32Array): MaskSet {
  const t = inputs.outputs.masks;
  if (!t || t.dims.length !== 4) {
    throw new LibreYOLOError('model_load_failed', `The RF-DETR segment model's forward gave no 'masks' output [B, Q, H/4, W/4] (outputs: ${Object.entries(inputs.outputs).map(([k, v]) => `${k} [${v.dims.join(',')}]`).join(', ')}).`);
  }
  const [, Q, mh, mw] = t.dims as [number, number, number, number];
  const H0 = inputs.origHeight, W0 = inputs.origWidth;
  const rows = bilinearTaps(mh, H0), cols = bilinearTaps(mw, W0);
  const data = t.data as Float32Array;
  const plane = mh * mw;
  const runs: Int32Array[] = [];
  const cache = new Map<number, Int32Array>();
  for (const q of source) {
    if (q < 0 || q >= Q) throw new LibreYOLOError('model_load_failed', `RF-DETR mask query ${q} is outside the ${Q} queries of the masks output.`);
    let r = cache.get(q);
    if (!r) {
      const builder = new RunBuilder(H0 * W0);
      const map = data.subarray((inputs.index * Q + q) * plane, (inputs.index * Q + q + 1) * plane);
      thresholdWindow(resampleWindow(map, 0, mh, 0, mw, rows, cols, H0, W0), 0, W0, builder);
      r = builder.finish();
      cache.set(q, r);
    }
    runs.push(r);
  }
  return { height: H0, width: W0, runs };
}

export const rfdetrSegment: SegmentHooks = {
  maskOutputs: ['masks'],
  masks,
};
