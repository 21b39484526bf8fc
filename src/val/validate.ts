/**
 * Validation of a detector on a dataset split, as the original's validator: predictions with
 * conf 0.001 (and the given NMS IoU / max_det; the images prepared as inference does, except for a
 * family whose original validator differs, D-FINE's double resize: `valInput`), ground truth
 * from the YOLO labels (pixel boxes clamped to the image, degenerate rows skipped), and COCO-style
 * metrics under the original's key names.
 */

import { LibreYOLOError } from '../errors.ts';
import { appendAll } from '../util/array.ts';
import { loadDataset, type DatasetOptions, type DatasetSplit, type SplitName } from '../data/dataset.ts';
import type { ImageLabels } from '../data/labels.ts';
import { ringsToRuns } from '../data/masks/polygon.ts';
import { runsArea, runsIntersection } from '../data/masks/rle.ts';
import { cocoEvaluate, metricsDict, perClassAP, segmentMetricsDict, type DetBox, type GtBox } from './metrics.ts';

/** What validation needs of a prediction (a `Results`). */
export interface PredictionLike {
  boxes: { xyxy: number[][]; conf: number[]; cls: number[] };
  /** `[height, width]` of the original image. */
  orig_shape: [number, number];
  speed?: { preprocess: number; inference: number; postprocess: number };
  /** Segment models: one mask per box (row-major run lengths at the original size); null without detections. */
  masks?: { runs: readonly Int32Array[] } | null;
}

/** The tasks validated here. */
export type ValidationTask = 'detect' | 'segment';

/** A box with its mask (run lengths at the image size) and the mask's area. */
export interface MaskGt extends GtBox { runs: Int32Array; maskArea: number }
export interface MaskDet extends DetBox { runs: Int32Array; maskArea: number }

/** What validation needs of a model (`LibreYOLOModel` fits). */
export interface PredictorLike {
  /** The model's task: `detect` (default) or `segment` (box and mask metrics). */
  readonly task?: string;
  predict(source: string[], options: { conf: number; iou: number; max_det: number; batch: number; imgsz?: number | [number, number] }): Promise<PredictionLike[]>;
  /** predict() with the images prepared as the original's validator does (LibreYOLOModel has it); used when present. */
  predictForValidation?(source: string[], options: { conf: number; iou: number; max_det: number; batch: number; imgsz?: number | [number, number] }): Promise<PredictionLike[]>;
}

export interface ValidateOptions extends DatasetOptions {
  /** Split to evaluate (default 'val'). */
  split?: SplitName;
  /** Confidence threshold (default 0.001). */
  conf?: number;
  /** NMS IoU (default 0.6 standalone; the trainer passes 0.65). */
  iou?: number;
  /** Detections kept per image (default 300). */
  max_det?: number;
  /** Images per forward pass (default 16). */
  batch?: number;
  /** Network input size (default: the model's). */
  imgsz?: number | [number, number];
  /** Images per predict call, bounding memory (default 256). */
  chunk?: number;
  /** Called after each chunk. */
  onProgress?: (done: number, total: number) => void;
}

export interface ClassMetrics {
  cls: number;
  name: string;
  /** images containing the class / objects of the class */
  images: number;
  instances: number;
  /** AP50-95 and AP50 (-1 when the class has no ground truth). */
  ap: number;
  ap50: number;
}

export interface ValidationResult {
  /** `metrics/precision`, `metrics/recall`, `metrics/mAP50`, `metrics/mAP50-95`, `metrics/mAP75`, ... */
  metrics: Record<string, number>;
  /** The 12 COCOeval summary stats (of the masks for a segment model). */
  stats: number[];
  images: number;
  instances: number;
  perClass: ClassMetrics[];
  /** Mean milliseconds per image. */
  speed: { preprocess: number; inference: number; postprocess: number };
  seconds: number;
}

/** Ground-truth rows of one image kept for evaluation, with their row index in the label file. */
function groundTruthRows(labels: ImageLabels, image: number, width: number, height: number, nc: number): { row: number; box: GtBox }[] {
  const out: { row: number; box: GtBox }[] = [];
  const { rows, n } = labels;
  for (let i = 0; i < n; i++) {
    const o = i * 5;
    const cls = rows[o]!, cx = rows[o + 1]!, cy = rows[o + 2]!, w = rows[o + 3]!, h = rows[o + 4]!;
    if (!(cls >= 0 && cls < nc)) continue;
    const x1 = Math.min(Math.max((cx - w / 2) * width, 0), width), x2 = Math.min(Math.max((cx + w / 2) * width, 0), width);
    const y1 = Math.min(Math.max((cy - h / 2) * height, 0), height), y2 = Math.min(Math.max((cy + h / 2) * height, 0), height);
    if (x2 - x1 <= 0 || y2 - y1 <= 0) continue;
    out.push({ row: i, box: { image, cls, x1, y1, x2, y2, area: (x2 - x1) * (y2 - y1) } });
  }
  return out;
}

/**
 * Ground-truth boxes of one image from its YOLO labels: pixel xyxy on a `width x height` image,
 * clamped to it; rows with a non-positive side after clamping, or a class outside 0..nc-1, skipped.
 */
export function groundTruthBoxes(labels: ImageLabels, image: number, width: number, height: number, nc: number): GtBox[] {
  return groundTruthRows(labels, image, width, height, nc).map((r) => r.box);
}

/**
 * Ground truth of one image for mask metrics, as the original's COCO-style index from YOLO labels:
 * a polygon row is its ring in pixels (clamped to the image) rasterised as pycocotools does, its box
 * the clamped extents and its area the box area; a box row (5 fields) has an empty mask.
 */
export function groundTruthMasks(labels: ImageLabels, image: number, width: number, height: number, nc: number): MaskGt[] {
  return groundTruthRows(labels, image, width, height, nc).map(({ row, box }) => {
    const ring = labels.segments?.[row];
    const runs = ring ? ringsToRuns([Float64Array.from(ring, (v, k) => v * (k % 2 ? height : width))], height, width) : Int32Array.of(width * height);
    return { ...box, runs, maskArea: runsArea(runs) };
  });
}

/** Detections of one segment prediction with their masks. */
export function detectionMasks(pred: PredictionLike, image: number): MaskDet[] {
  const boxes = detectionBoxes(pred, image);
  if (boxes.length === 0) return [];
  const [h, w] = pred.orig_shape;
  const runs = pred.masks?.runs;
  if (!runs || runs.length !== boxes.length) {
    throw new LibreYOLOError('config_conflict', `segment validation needs one mask per detection: image ${image} has ${boxes.length} boxes and ${runs?.length ?? 0} masks`);
  }
  return boxes.map((b, i) => {
    const r = runs[i]!;
    const total = r.reduce((a, v) => a + v, 0);
    if (total !== w * h) throw new LibreYOLOError('config_conflict', `mask ${i} of image ${image} covers ${total} pixels, expected its original size ${w}x${h}`);
    return { ...b, runs: r, maskArea: runsArea(r) };
  });
}

/** maskUtils.iou on two masks: |D n G| / |D u G|, or / |D| for a crowd ground truth; 0 when empty. */
export function maskIou(d: MaskDet, g: MaskGt, crowd: boolean): number {
  const inter = d.maskArea && g.maskArea ? runsIntersection(d.runs, g.runs) : 0;
  const union = crowd ? d.maskArea : d.maskArea + g.maskArea - inter;
  return union > 0 ? inter / union : 0;
}

/** Detections of one prediction as metric input. */
export function detectionBoxes(pred: PredictionLike, image: number): DetBox[] {
  const { xyxy, conf, cls } = pred.boxes;
  return xyxy.map((b, i) => ({ image, cls: cls[i]!, x1: b[0]!, y1: b[1]!, x2: b[2]!, y2: b[3]!, score: conf[i]! }));
}

/**
 * Metrics of predictions against a split: `predictions[i]` belongs to `split.images[i]` (its
 * `orig_shape` sizes the ground truth). Usable without a model, e.g. by a trainer that predicts itself.
 */
export function evaluatePredictions(
  split: Pick<DatasetSplit, 'labels' | 'config'>, predictions: readonly PredictionLike[], task: ValidationTask = 'detect',
): Omit<ValidationResult, 'seconds'> {
  if (predictions.length !== split.labels.length) {
    throw new LibreYOLOError('config_conflict', `got ${predictions.length} predictions for ${split.labels.length} images`);
  }
  const nc = split.config.nc;
  const gts: GtBox[] = [], dets: DetBox[] = [];
  const maskGts: MaskGt[] = [], maskDets: MaskDet[] = [];
  const classImages = new Array<number>(nc).fill(0);
  const speed = { preprocess: 0, inference: 0, postprocess: 0 };
  predictions.forEach((p, i) => {
    const [h, w] = p.orig_shape;
    const g = groundTruthBoxes(split.labels[i]!, i, w, h, nc);
    appendAll(gts, g);
    for (const c of new Set(g.map((b) => b.cls))) classImages[c]!++;
    appendAll(dets, detectionBoxes(p, i));
    if (task === 'segment') {
      appendAll(maskGts, groundTruthMasks(split.labels[i]!, i, w, h, nc));
      appendAll(maskDets, detectionMasks(p, i));
    }
    if (p.speed) { speed.preprocess += p.speed.preprocess; speed.inference += p.speed.inference; speed.postprocess += p.speed.postprocess; }
  });
  const scope = { catIds: Array.from({ length: nc }, (_, c) => c), imageIds: predictions.map((_, i) => i) };
  const res = cocoEvaluate(gts, dets, scope);
  // Segment: the mask evaluation is the headline (unsuffixed keys, per-class AP), the box one is (B).
  const maskRes = task === 'segment' ? cocoEvaluate(maskGts, maskDets, { ...scope, iou: maskIou }) : null;
  const headline = maskRes ?? res;
  const metrics = maskRes ? segmentMetricsDict(res, maskRes) : metricsDict(res);
  const n = Math.max(1, predictions.length);
  metrics['speed/preprocess'] = speed.preprocess / n;
  metrics['speed/inference'] = speed.inference / n;
  metrics['speed/postprocess'] = speed.postprocess / n;
  const instances = new Array<number>(nc).fill(0);
  for (const g of gts) instances[g.cls]!++;
  const perClass = perClassAP(headline).map(({ cls, ap, ap50 }) => ({
    cls, name: split.config.names[cls] ?? String(cls), images: classImages[cls]!, instances: instances[cls]!, ap, ap50,
  }));
  return {
    metrics, stats: headline.stats, images: predictions.length, instances: gts.length, perClass,
    speed: { preprocess: speed.preprocess / n, inference: speed.inference / n, postprocess: speed.postprocess / n },
  };
}

/**
 * Validates `model` on a split of `data` (a YAML path, a bundled name, or an already loaded split).
 *
 *     const { metrics } = await validate(model, 'datasets/synth/data.yaml', { iou: 0.65, batch: 8 });
 *     metrics['metrics/mAP50-95'];
 */
export async function validate(model: PredictorLike, data: string | DatasetSplit, options: ValidateOptions = {}): Promise<ValidationResult> {
  const task = model.task ?? 'detect';
  if (task !== 'detect' && task !== 'segment') {
    throw new LibreYOLOError('config_unsupported', `Validation of ${task} models is not implemented yet; this package validates detection and segment models.`);
  }
  const t0 = performance.now();
  const split = typeof data === 'string' ? await loadDataset(data, options.split ?? 'val', options) : data;
  const chunk = Math.max(1, options.chunk ?? 256);
  const predictOptions = {
    conf: options.conf ?? 0.001, iou: options.iou ?? 0.6, max_det: options.max_det ?? 300, batch: options.batch ?? 16,
    ...(options.imgsz !== undefined ? { imgsz: options.imgsz } : {}),
  };
  const predictions: PredictionLike[] = [];
  for (let i = 0; i < split.images.length; i += chunk) {
    const paths = split.images.slice(i, i + chunk);
    const res = model.predictForValidation ? await model.predictForValidation(paths, predictOptions) : await model.predict(paths, predictOptions);
    if (res.length !== paths.length) throw new LibreYOLOError('io_error', `predict returned ${res.length} results for ${paths.length} images`);
    appendAll(predictions, res);
    options.onProgress?.(predictions.length, split.images.length);
  }
  return { ...evaluatePredictions(split, predictions, task), seconds: (performance.now() - t0) / 1000 };
}

/**
 * A one-line summary. The original's `metrics/precision` and `metrics/recall` are the means of
 * COCOeval's whole precision and recall arrays, which are mAP50-95 and AR100 by definition (not a P/R
 * at one threshold), so the line names them by what they are instead of printing them as P and R.
 */
export function formatMetrics(r: Pick<ValidationResult, 'metrics' | 'images' | 'instances'>): string {
  const m = r.metrics;
  const f = (v: number | undefined): string => (v === undefined ? '-' : v.toFixed(4));
  if (m['metrics/mAP50(M)'] !== undefined) {
    return `images ${r.images}  instances ${r.instances}  mask mAP50 ${f(m['metrics/mAP50'])}  mAP50-95 ${f(m['metrics/mAP50-95'])}  ` +
      `mAP75 ${f(m['metrics/mAP75'])}  AR100 ${f(m['metrics/AR100'])}  box mAP50(B) ${f(m['metrics/mAP50(B)'])}  mAP50-95(B) ${f(m['metrics/mAP50-95(B)'])}`;
  }
  return `images ${r.images}  instances ${r.instances}  mAP50 ${f(m['metrics/mAP50'])}  mAP50-95 ${f(m['metrics/mAP50-95'])}  ` +
    `mAP75 ${f(m['metrics/mAP75'])}  AR100 ${f(m['metrics/AR100'])}`;
}
