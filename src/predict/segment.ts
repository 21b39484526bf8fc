/**
 * Instance segmentation of one image: the family's candidates (each with its source row) through the
 * shared per-class NMS, max_det and the class filter, or for an NMS-free family the shared top-k
 * over (query, class) pairs (a query may be picked for several classes) and the class filter; then
 * the family's masks for the rows that survived, so masks are only ever assembled for the final
 * detections.
 */
import type { DetectionSet, ModelFamily, MaskInputs } from '../models/registry.ts';
import { LibreYOLOError } from '../errors.ts';
import { span } from '../runtime/spans.ts';
import { batchedNms, concatDetections, select } from './merge.ts';
import { postprocessKind, selectTopKRows } from './postprocess.ts';
import { flipRuns } from '../data/masks/rle.ts';
import { Masks } from './masks.ts';
import type { ImageOutput } from './pipeline.ts';
import type { Detections } from './postprocess.ts';

export interface SegmentOptions {
  conf: number;
  iou: number;
  maxDet: number;
  classes: readonly number[] | null;
  /** The model's class count, for an NMS-free family's column map (default: the output's score columns). */
  nc?: number;
}

/** The NMS-free rows of one image: top-k pairs with k capped at the query count (the seg sizes' num_select), the strict conf threshold. */
function topkCandidates<T>(family: ModelFamily, o: ImageOutput<T>, opts: SegmentOptions): DetectionSet & { source: Int32Array } {
  const columns = o.rows - 4;
  const post = {
    conf: opts.conf, iou: opts.iou, maxDet: opts.maxDet,
    ratio: o.plan.ratio, origWidth: o.image.width, origHeight: o.image.height,
    ...(o.plan.ratioY !== undefined ? { ratioY: o.plan.ratioY } : {}),
    ...postprocessKind(family, columns, opts.nc ?? columns),
  };
  if (post.topk === undefined) throw new LibreYOLOError('config_unsupported', `${family.displayName} segment models need candidates from their family (it has NMS postprocess).`);
  return selectTopKRows(o.output, o.offset, o.anchors, columns, post, Math.min(post.topk, o.anchors));
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
    const cand = hooks.candidates ? hooks.candidates(inputs, opts.conf) : topkCandidates(family, o, opts);
    // The top-k already applied max_det (as its k).
    let rows = hooks.candidates ? batchedNms(cand.xyxy, cand.conf, cand.cls, opts.iou) : Array.from(cand.conf, (_, r) => r);
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
