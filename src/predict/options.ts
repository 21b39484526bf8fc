/**
 * Predict options: defaults, the original's keyword policy (rejected / no-op / accepted keys) and
 * validation, all before any image is loaded.
 */
import { LibreYOLOError } from '../errors.ts';
import { normalizeGraphMode, type GraphMode } from '../runtime/graph-capture.ts';
import { MATCH_METRICS, MERGE_TYPES, parseChoice, type MergeRule } from './tile-merge.ts';
import { checkOverlapRatio } from './tiling.ts';
import { defaultWarn, type Warn } from '../util/warn.ts';
import { checkImgszLimit, normalizeImgsz } from '../util/imgsz.ts';

// Re-exported for callers that imported them from here before they moved to util/.
export { checkImgszLimit, defaultWarn, normalizeImgsz, type Warn };

export interface PredictOptions {
  /** Confidence threshold (strictly greater passes). Default 0.25. */
  conf?: number;
  /** NMS IoU threshold. Default 0.45. */
  iou?: number;
  /** Network input size: a square side or `[height, width]`, multiples of 32. Default: the model's. */
  imgsz?: number | [number, number];
  /** Keep only these class ids (applied after NMS and max_det). */
  classes?: number[] | number | null;
  /** Maximum detections per image. Default 300. */
  max_det?: number;
  /** Write annotated images (runs/detect/predict[N]). */
  save?: boolean;
  /** Where to save: a directory or a file path. */
  output_path?: string;
  /** jpg | jpeg | png | webp (default jpg). */
  output_file_format?: string;
  /** Move the model to this device before predicting. */
  device?: string | number;
  /**
   * Images per forward for lists and folders (and tiles per forward with `tiling`). Default 1.
   * Images are stacked only when the family allows it and the network is not in train mode.
   */
  batch?: number;
  /** Return an async iterator that holds at most one chunk of results instead of an array. */
  stream?: boolean;
  /** Split large images into overlapping square tiles of the input size; merge by per-class NMS. */
  tiling?: boolean;
  /** Tile overlap in [0, 1). Default 0.2. */
  overlap_ratio?: number;
  /** How tile detections are combined (tiling only): 'NMS' (default, the original's), 'NMM' or 'GREEDYNMM' (SAHI's). */
  postprocess_type?: 'NMS' | 'NMM' | 'GREEDYNMM' | Lowercase<'NMS' | 'NMM' | 'GREEDYNMM'>;
  /** Overlap measure of the tile merge (tiling only): 'IOU' (default) or 'IOS' (intersection over the smaller box). */
  match_metric?: 'IOU' | 'IOS' | 'iou' | 'ios';
  /** Boxes match when the metric is strictly above this (tiling only). Default: `iou`. */
  match_threshold?: number;
  /** Match boxes of different classes in the tile merge (tiling only). Default false. */
  class_agnostic?: boolean;
  /** Also run the whole image at the input size and merge it with the tiles (tiling only). Default false. */
  perform_standard_pred?: boolean;
  /** Test-time augmentation: add the mirrored view (times TTA_SCALES), merge by per-class NMS at `iou`. */
  augment?: boolean;
  /** Replay a captured graph: false (default), true (capture on first use of a shape) or 'auto' (once a shape repeats). */
  cuda_graph?: boolean | 'auto' | string | null;
  /** Accepted for compatibility; a warning says it changes nothing. */
  half?: boolean;
  /** Project dir that `runs/` is resolved against (default: cwd). */
  project_dir?: string;
  /** Videos and live streams: keep every N-th frame (frames 0, N, 2N, ...). Default 1. */
  vid_stride?: number;
  /** Live streams: queue every frame (true) or keep only the newest so results stay current (false, default). */
  stream_buffer?: boolean;
  /** Refused: there is no window to show frames in from Node; use `save: true`. */
  show?: boolean;
}

export interface ResolvedPredictOptions {
  conf: number;
  iou: number;
  imgsz: [number, number] | null;
  classes: number[] | null;
  maxDet: number;
  save: boolean;
  outputPath: string | undefined;
  outputFormat: string;
  device: string | number | undefined;
  batch: number;
  stream: boolean;
  tiling: boolean;
  overlapRatio: number;
  /** How tiles are merged; the default is the original's per-class NMS at `iou`. */
  tileMerge: MergeRule;
  /** Add a full-image pass to the tiles (SAHI's perform_standard_pred). */
  standardPred: boolean;
  augment: boolean;
  cudaGraph: GraphMode;
  projectDir: string;
  /** Keep every N-th video frame. */
  vidStride: number;
  /** Live streams: queue every frame instead of keeping the newest. */
  streamBuffer: boolean;
}

/** Options that only shape the tile merge: refused without `tiling`, so none is accepted and ignored. */
const TILE_MERGE_KEYS = ['postprocess_type', 'match_metric', 'match_threshold', 'class_agnostic', 'perform_standard_pred'] as const;

const ACCEPTED = new Set<string>([
  'conf', 'iou', 'imgsz', 'classes', 'max_det', 'save', 'output_path', 'output_file_format', 'device', 'batch',
  'stream', 'tiling', 'overlap_ratio', 'augment', 'project_dir', 'half', 'stream_buffer', 'vid_stride', 'cuda_graph', 'show',
  ...TILE_MERGE_KEYS,
]);
const REJECTED = new Set(['visualize', 'embed']);
const NO_OPS = new Set(['boxes', 'dnn', 'half', 'line_width', 'retina_masks', 'show_conf', 'show_labels', 'verbose']);
const warned = new Set<string>();

/** What `half` does here: nothing per call; the precision is the model's, set when it was exported or quantized. */
export const HALF_NOTICE = 'half=true changes nothing here: a model runs in the precision it was loaded or quantized in '
  + '(float32 for .pt and .safetensors weights; an exported .onnx keeps its own). For float16, export with half=true '
  + "(export({ half: true }), `libreyolo export format=onnx half=true`) or quantize (quantize({ recipe: 'fp16' }), `libreyolo quantize recipe=fp16`).";

function finiteUnit(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 1) {
    throw new LibreYOLOError('config_range_error', `${name} must be finite and in [0.0, 1.0], got ${String(v)}`);
  }
  return v;
}

function positiveInt(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new LibreYOLOError('config_type_error', `${name} must be an integer, got ${String(v)}`);
  if (v < 1) throw new LibreYOLOError('config_range_error', `${name} must be positive, got ${v}`);
  return v;
}

export function normalizeClasses(v: unknown, names: Record<number, string>): number[] | null {
  if (v === undefined || v === null) return null;
  const list = typeof v === 'number' ? [v] : v;
  if (!Array.isArray(list) || !list.every((c) => typeof c === 'number' && Number.isInteger(c))) {
    throw new LibreYOLOError('config_type_error', `classes must be integer class IDs (a number or a list of numbers), got ${JSON.stringify(v)}`);
  }
  const negative = list.filter((c) => c < 0);
  if (negative.length) throw new LibreYOLOError('config_range_error', `classes must be non-negative IDs, got ${negative.join(', ')}`);
  const unknown = list.filter((c) => !(c in names));
  if (unknown.length) throw new LibreYOLOError('config_range_error', `unknown class IDs ${unknown.join(', ')}: the model has classes 0..${Object.keys(names).length - 1}`);
  return list as number[];
}

/** A boolean option: absent is false; anything but true/false (the string 'false' too) is refused, never coerced. */
export function flag(name: string, v: unknown): boolean {
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw new LibreYOLOError('config_type_error', `${name} must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

/**
 * `vid_stride` must be a whole number >= 1 (the original turned 0, negatives and 0.5 into 1 and 2.7
 * into 2 while dividing the saved fps by 2.7; both are refused here). `show` needs a window system.
 */
function checkFrameOptions(raw: Record<string, unknown>): { vidStride: number; streamBuffer: boolean } {
  const stride = raw.vid_stride ?? 1;
  if (typeof stride !== 'number' || !Number.isInteger(stride)) throw new LibreYOLOError('config_type_error', `vid_stride must be an integer, got ${JSON.stringify(stride)}`);
  if (stride < 1) throw new LibreYOLOError('config_range_error', `vid_stride must be positive, got ${stride}`);
  if (flag('show', raw.show)) {
    throw new LibreYOLOError('config_unsupported', 'show=true opens a window per frame, which Node has no window system for. Use save=true and open the saved video (or image) instead.');
  }
  return { vidStride: stride, streamBuffer: flag('stream_buffer', raw.stream_buffer) };
}

/** The tile merge rule; its keys without `tiling` are refused rather than ignored. */
function resolveTileMerge(raw: Record<string, unknown>, iou: number): MergeRule {
  const given = TILE_MERGE_KEYS.filter((k) => raw[k] !== undefined);
  if (given.length && !raw.tiling) {
    throw new LibreYOLOError('config_conflict', `${given.join(', ')} ${given.length > 1 ? 'apply' : 'applies'} to tiled inference only: add tiling=true or remove ${given.length > 1 ? 'them' : 'it'}.`);
  }
  flag('perform_standard_pred', raw.perform_standard_pred);
  return {
    type: raw.postprocess_type === undefined ? 'NMS' : parseChoice('postprocess_type', raw.postprocess_type, MERGE_TYPES),
    metric: raw.match_metric === undefined ? 'IOU' : parseChoice('match_metric', raw.match_metric, MATCH_METRICS),
    threshold: raw.match_threshold === undefined ? iou : finiteUnit('match_threshold', raw.match_threshold),
    classAgnostic: flag('class_agnostic', raw.class_agnostic),
  };
}

export function resolvePredictOptions(
  raw: Record<string, unknown>,
  model: { names: Record<number, string>; imgszStride: number },
  warn: Warn = defaultWarn,
): ResolvedPredictOptions {
  // The graph-capture mode is checked first, as the original's wrapper does.
  const cudaGraph = normalizeGraphMode(raw.cuda_graph);
  const keys = Object.keys(raw).filter((k) => raw[k] !== undefined);
  const rejected = keys.filter((k) => REJECTED.has(k)).sort();
  if (rejected.length) throw new LibreYOLOError('config_unsupported', `LibreYOLO does not support these predict options: ${rejected.join(', ')}.`);
  if (raw.agnostic_nms) throw new LibreYOLOError('config_unsupported', "agnostic_nms=true is not supported by this model's predict path.");
  for (const k of keys.filter((x) => NO_OPS.has(x)).sort()) {
    if (!warned.has(k)) {
      warned.add(k);
      warn(k === 'half' ? HALF_NOTICE : `Predict option '${k}' is accepted for CLI compatibility but is currently a no-op in LibreYOLO.`);
    }
  }
  const unknown = keys.filter((k) => !ACCEPTED.has(k) && !NO_OPS.has(k) && k !== 'agnostic_nms').sort();
  if (unknown.length) {
    throw new LibreYOLOError('config_unknown_key',
      `Unsupported predict option(s): ${unknown.join(', ')}. Supported options include conf, iou, imgsz, device, classes, max_det, save, stream, and vid_stride.`);
  }
  const frames = checkFrameOptions(raw);
  // Booleans are checked before anything tests them ('false' is a string, and truthy).
  const [save, stream, tiling, augment] = (['save', 'stream', 'tiling', 'augment'] as const).map((k) => flag(k, raw[k]));
  const maxDet = raw.max_det ?? 300;
  if (typeof maxDet !== 'number' || !Number.isInteger(maxDet)) throw new LibreYOLOError('config_type_error', `max_det must be an integer, got ${String(maxDet)}`);
  if (maxDet < 0) throw new LibreYOLOError('config_range_error', `max_det must be non-negative, got ${maxDet}`);
  const overlap = raw.overlap_ratio ?? 0.2;
  let fmt = String(raw.output_file_format ?? 'jpg').toLowerCase().replace(/^\./, '');
  if (!['jpg', 'jpeg', 'png', 'webp'].includes(fmt)) {
    throw new LibreYOLOError('config_range_error', `Invalid output_file_format: ${String(raw.output_file_format)}. Must be one of: 'jpg', 'png', 'webp'`);
  }
  if (fmt === 'jpeg') fmt = 'jpg';
  if (tiling && augment) throw new LibreYOLOError('config_conflict', 'tiling and augment cannot be used together. Disable one of them.');
  if (tiling) checkOverlapRatio(overlap);
  const conf = finiteUnit('conf', raw.conf ?? 0.25);
  const iou = finiteUnit('iou', raw.iou ?? 0.45);
  const tileMerge = resolveTileMerge(raw, iou);
  return {
    conf,
    iou,
    imgsz: normalizeImgsz(raw.imgsz, model.imgszStride, warn),
    classes: normalizeClasses(raw.classes, model.names),
    maxDet,
    save,
    outputPath: raw.output_path === undefined ? undefined : String(raw.output_path),
    outputFormat: fmt,
    device: raw.device as string | number | undefined,
    batch: positiveInt('batch', raw.batch ?? 1),
    stream,
    tiling,
    overlapRatio: overlap as number,
    tileMerge,
    standardPred: raw.perform_standard_pred === true,
    augment,
    cudaGraph,
    projectDir: raw.project_dir === undefined ? process.cwd() : String(raw.project_dir),
    ...frames,
  };
}
