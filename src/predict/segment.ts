/**
 * Instance segmentation of one image: the family's candidates (each with its source row), the shared
 * per-class NMS, max_det, the class filter, then the family's masks for the rows that survived, so
 * masks are only ever assembled for the final detections.
 */
import type { ModelFamily, MaskInputs } from '../models/registry.ts';
import { LibreYOLOError } from '../errors.ts';
import { span } from '../runtime/spans.ts';
import { batchedNms, concatDetections, select } from './merge.ts';
import { flipRuns } from '../data/masks/rle.ts';
import { Masks } from './masks.ts';
import type { ImageOutput } from './pipeline.ts';
import type { Detections } from './postprocess.ts';

export interface SegmentOptions {
  conf: number;
  iou: number;
  maxDet: number;
  classes: readonly number[] | null;
}

export function segmentDetections<T>(family: ModelFamily, o: ImageOutput<T>, opts: SegmentOptions): { det: Detections; masks: Masks | null } {
  const hooks = family.segment;
  if (!hooks) throw new LibreYOLOError('config_unsupported', `${family.displayName} models have no segment task.`);
  const inputs: MaskInputs = {
    outputs: o.outputs, index: o.index,
    inputHeight: o.plan.dims[2]!, inputWidth: o.plan.dims[3]!,
    ratio: o.plan.ratio, ...(o.plan.ratioY !== undefined ? { ratioY: o.plan.ratioY } : {}),
    origWidth: o.image.width, origHeight: o.image.height,
  };
  const { det, source } = span('nms', 'postprocess', () => {
    const cand = hooks.candidates(inputs, opts.conf);
    let rows = batchedNms(cand.xyxy, cand.conf, cand.cls, opts.iou);
    if (opts.maxDet >= 0) rows = rows.slice(0, opts.maxDet);
    // The class filter runs on the final detections, as the original's result wrapper does.
    if (opts.classes) {
      const allowed = new Set(opts.classes);
      rows = rows.filter((r) => allowed.has(cand.cls[r]!));
    }
    return { det: select(cand, rows), source: Int32Array.from(rows, (r) => cand.source[r]!) };
  });
  if (source.length === 0) return { det, masks: null };
  const masks = span('masks', 'postprocess', () => new Masks(hooks.masks(inputs, source)));
  return { det, masks };
}

/** One TTA view's detections (already mapped back to the image) and masks (as the view saw them). */
export interface SegmentView {
  det: Detections;
  masks: Masks | null;
  flipped: boolean;
}

/**
 * The views of one image merged as the original merges TTA views: mirrored views' masks mirrored
 * back, every row of every view through per-class NMS on the boxes, the class filter, max_det; the
 * masks follow their rows.
 */
export function mergeSegmentViews(views: readonly SegmentView[], opts: { iou: number; maxDet: number; classes: readonly number[] | null }): { det: Detections; masks: Masks | null } {
  const all = concatDetections(views.map((v) => v.det));
  if (all.conf.length !== views.reduce((n, v) => n + v.det.conf.length, 0)) throw new Error('mergeSegmentViews: segment candidates are finite by construction');
  const runs: Int32Array[] = [];
  let shape: [number, number] | null = null;
  for (const v of views) {
    if (!v.masks) continue;
    const [h, w] = v.masks.orig_shape;
    shape = [h, w];
    for (const r of v.masks.runs) runs.push(v.flipped ? flipRuns(r, w, h) : r);
  }
  let rows = batchedNms(all.xyxy, all.conf, all.cls, opts.iou);
  if (opts.classes) {
    const allowed = new Set(opts.classes);
    rows = rows.filter((r) => allowed.has(all.cls[r]!));
  }
  if (opts.maxDet >= 0) rows = rows.slice(0, opts.maxDet);
  const det = select(all, rows);
  if (rows.length === 0 || !shape) return { det, masks: null };
  return { det, masks: new Masks({ height: shape[0], width: shape[1], runs: rows.map((r) => runs[r]!) }) };
}
