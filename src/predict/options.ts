/**
 * Predict options: one table of rules, defaults and help lines (PREDICT_OPTIONS, which the CLI's
 * flags are generated from), the original's keyword policy (rejected / no-op / accepted keys) and
 * validation, all before any image is loaded. camelCase keys (`maxDet`) are read as snake_case.
 */
import { LibreYOLOError } from '../errors.ts';
import { normalizeGraphMode, type GraphMode } from '../runtime/graph-capture.ts';
import { MATCH_METRICS, MERGE_TYPES, type MergeRule } from './tile-merge.ts';
import { OVERLAP_RATIO } from './tiling.ts';
import {
  boolean, booleanText, choice, fraction, fromCli, integer, normalizeKeys, optionRangeError, optionTypeError, text, type Rule,
} from '../util/options.ts';
import { defaultWarn, type Warn } from '../util/warn.ts';
import { checkImgszLimit, IMGSZ, normalizeImgsz } from '../util/imgsz.ts';

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

/** `0`, `0,2`, `[0,2,5]` as class ids; other text stays text (and is refused). */
function classesText(s: string): unknown {
  const parts = s.trim().replace(/^\[|\]$/g, '').split(',').map((p) => p.trim()).filter((p) => p !== '');
  return parts.length && parts.every((p) => /^-?\d+$/.test(p)) ? parts.map(Number) : s;
}

const CLASSES: Rule<number[] | null> = {
  want: 'integer class IDs', form: 'value', fromText: classesText,
  check(key, v) {
    if (v === null) return null;
    const list = typeof v === 'number' ? [v] : v;
    if (!Array.isArray(list) || !list.every((c) => typeof c === 'number' && Number.isInteger(c))) {
      throw optionTypeError(key, 'integer class IDs (a number or a list of numbers)', v);
    }
    const negative = list.filter((c) => c < 0);
    if (negative.length) throw optionRangeError(key, 'non-negative IDs', negative.length === 1 ? negative[0] : negative);
    return list as number[];
  },
};

/** A device name or a CUDA index: `cpu`, `0`, `cuda:0`, `webgpu` (checked when the model moves). */
const DEVICE: Rule<string | number> = {
  want: 'a device name (cpu, 0 / cuda:0, webgpu)', form: 'value', fromText: (t) => t,
  check(key, v) {
    if ((typeof v === 'string' && v.trim() !== '') || (typeof v === 'number' && Number.isInteger(v) && v >= 0)) return v;
    throw optionTypeError(key, 'a device name (cpu, 0 / cuda:0, webgpu)', v);
  },
};

const OUTPUT_FORMATS = ['jpg', 'jpeg', 'png', 'webp'] as const;
const FORMAT_CHOICE = choice(OUTPUT_FORMATS, { anyCase: true });
/** jpg | jpeg | png | webp, a leading dot allowed; `jpeg` is `jpg`. */
const OUTPUT_FORMAT: Rule<string> = {
  ...FORMAT_CHOICE,
  check(key, v) {
    const f = FORMAT_CHOICE.check(key, typeof v === 'string' ? v.replace(/^\s*\./, '') : v);
    return f === 'jpeg' ? 'jpg' : f;
  },
};

const GRAPH_MODE: Rule<GraphMode> = {
  want: "true, false or 'auto'", form: 'value', fromText: booleanText,
  check: (_key, v) => normalizeGraphMode(v),
};

interface PredictOption<T> {
  rule: Rule<T>;
  /** The value when the option is absent. */
  default?: T;
  /** One line for `libreyolo predict --help`; null: not a command-line option. */
  help: string | null;
}

const opt = <T>(rule: Rule<T>, help: string | null, dflt?: T): PredictOption<T> => ({ rule, help, ...(dflt === undefined ? {} : { default: dflt }) });

/**
 * Every predict option: its rule, default and help line. `resolvePredictOptions` checks each value
 * with its rule, and `libreyolo predict` generates its flags from this table, so a new option is
 * one line here (and its field in `PredictOptions`).
 */
export const PREDICT_OPTIONS = {
  conf: opt(fraction(), 'confidence threshold (strictly greater passes)', 0.25),
  iou: opt(fraction(), 'NMS IoU threshold', 0.45),
  imgsz: opt(IMGSZ, "input size: 640 or 480x640 (height x width); default the model's"),
  classes: opt(CLASSES, 'keep only these class ids: 0 or 0,2 or [0,2]'),
  max_det: opt(integer({ min: 0 }), 'maximum detections per image', 300),
  save: opt(boolean(), 'save annotated images under runs/detect/predict[N]', false),
  output_path: opt(text('a folder or file path'), 'folder or file for saved images'),
  output_file_format: opt(OUTPUT_FORMAT, 'saved image format: jpg, png or webp', 'jpg'),
  device: opt(DEVICE, 'cpu, 0 / cuda:0, or webgpu (default cpu)'),
  batch: opt(integer({ min: 1 }), 'images per forward pass for folders and lists', 1),
  stream: opt(boolean(), 'accepted for compatibility: the command line always prints each result as soon as it is ready', false),
  tiling: opt(boolean(), 'tiled inference for large images', false),
  overlap_ratio: opt(OVERLAP_RATIO, 'tile overlap in [0, 1) (tiling only)', 0.2),
  postprocess_type: opt(choice(MERGE_TYPES, { anyCase: true }), 'tile merge: NMS (default), NMM or GREEDYNMM (tiling only)'),
  match_metric: opt(choice(MATCH_METRICS, { anyCase: true }), 'tile merge overlap measure: IOU (default) or IOS (tiling only)'),
  match_threshold: opt(fraction(), 'tile merge threshold (tiling only; default iou)'),
  class_agnostic: opt(boolean(), 'tile merge across classes (tiling only)', false),
  perform_standard_pred: opt(boolean(), 'also run the whole image and merge it with the tiles (tiling only)', false),
  augment: opt(boolean(), 'test-time augmentation (original + mirrored view, merged by NMS)', false),
  cuda_graph: opt(GRAPH_MODE, 'graph capture: false, true or auto (needs a device that can capture)'),
  half: opt(boolean(), 'accepted for compatibility; a no-op (warns). Use export half=true or quantize recipe=fp16', false),
  project_dir: opt(text('a folder path'), 'folder that runs/ is created in (default: the working directory)'),
  vid_stride: opt(integer({ min: 1 }), 'videos and live streams: keep every N-th frame', 1),
  stream_buffer: opt(boolean(), 'live streams: queue every frame (true) or keep only the newest (false, default)', false),
  show: opt(boolean(), 'not supported: Node has no window to show frames in (true is refused); use save', false),
} as const satisfies Record<string, PredictOption<unknown>>;

export type PredictOptionKey = keyof typeof PREDICT_OPTIONS;
type ValueOf<K extends PredictOptionKey> = (typeof PREDICT_OPTIONS)[K]['rule'] extends Rule<infer T> ? T : never;

const isPredictKey = (k: string): k is PredictOptionKey => Object.hasOwn(PREDICT_OPTIONS, k);

/** One option's value: checked by its rule, or its default when absent. */
function read<K extends PredictOptionKey>(raw: Record<string, unknown>, key: K): ValueOf<K> | undefined {
  const o: PredictOption<unknown> = PREDICT_OPTIONS[key];
  return (raw[key] === undefined ? o.default : o.rule.check(key, raw[key])) as ValueOf<K> | undefined;
}

/** A predict option's value as `libreyolo predict key=<text>` gives it: the rule's check of the text read as its type. */
export function checkPredictOptionText(key: PredictOptionKey, text: string): unknown {
  const rule: Rule<unknown> = PREDICT_OPTIONS[key].rule;
  return rule.check(key, fromCli(rule, text));
}

/** Predict options with camelCase keys (`maxDet`) under their snake_case names (`max_det`). */
export function normalizePredictKeys(raw: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return normalizeKeys(raw, (k) => isPredictKey(k) || NO_OPS.has(k) || REJECTED.has(k) || k === 'agnostic_nms');
}

const REJECTED = new Set(['visualize', 'embed']);
const NO_OPS = new Set(['boxes', 'dnn', 'half', 'line_width', 'retina_masks', 'show_conf', 'show_labels', 'verbose']);
const warned = new Set<string>();

/** What `half` does here: nothing per call; the precision is the model's, set when it was exported or quantized. */
export const HALF_NOTICE = 'half=true changes nothing here: a model runs in the precision it was loaded or quantized in '
  + '(float32 for .pt and .safetensors weights; an exported .onnx keeps its own). For float16, export with half=true '
  + "(export({ half: true }), `libreyolo export format=onnx half=true`) or quantize (quantize({ recipe: 'fp16' }), `libreyolo quantize recipe=fp16`).";

/** The class filter checked against the model's classes. */
export function normalizeClasses(v: unknown, names: Record<number, string>): number[] | null {
  if (v === undefined || v === null) return null;
  const list = CLASSES.check('classes', v)!;
  const unknown = list.filter((c) => !(c in names));
  if (unknown.length) throw new LibreYOLOError('config_range_error', `unknown class IDs ${unknown.join(', ')}: the model has classes 0..${Object.keys(names).length - 1}`);
  return list;
}

const BOOLEAN = boolean();

/** A boolean option: absent is false; anything but true/false (the string 'false' too) is refused, never coerced. */
export function flag(name: string, v: unknown): boolean {
  return v === undefined ? false : BOOLEAN.check(name, v);
}

/** The tile merge rule; its keys without `tiling` are refused rather than ignored. */
function resolveTileMerge(raw: Record<string, unknown>, tiling: boolean, iou: number): MergeRule {
  const given = TILE_MERGE_KEYS.filter((k) => raw[k] !== undefined);
  if (given.length && !tiling) {
    throw new LibreYOLOError('config_conflict', `${given.join(', ')} ${given.length > 1 ? 'apply' : 'applies'} to tiled inference only: add tiling=true or remove ${given.length > 1 ? 'them' : 'it'}.`);
  }
  return {
    type: read(raw, 'postprocess_type') ?? 'NMS',
    metric: read(raw, 'match_metric') ?? 'IOU',
    threshold: read(raw, 'match_threshold') ?? iou,
    classAgnostic: read(raw, 'class_agnostic')!,
  };
}

export function resolvePredictOptions(
  given: Record<string, unknown>,
  model: { names: Record<number, string>; imgszStride: number },
  warn: Warn = defaultWarn,
): ResolvedPredictOptions {
  const raw = normalizePredictKeys(given);
  // The graph-capture mode is checked first, as the original's wrapper does.
  const cudaGraph = read(raw, 'cuda_graph') ?? 'off';
  const keys = Object.keys(raw);
  const rejected = keys.filter((k) => REJECTED.has(k)).sort();
  if (rejected.length) throw new LibreYOLOError('config_unsupported', `LibreYOLO does not support these predict options: ${rejected.join(', ')}.`);
  if (raw.agnostic_nms) throw new LibreYOLOError('config_unsupported', "agnostic_nms=true is not supported by this model's predict path.");
  for (const k of keys.filter((x) => NO_OPS.has(x)).sort()) {
    if (!warned.has(k)) {
      warned.add(k);
      warn(k === 'half' ? HALF_NOTICE : `Predict option '${k}' is accepted for CLI compatibility but is currently a no-op in LibreYOLO.`);
    }
  }
  const unknown = keys.filter((k) => !isPredictKey(k) && !NO_OPS.has(k) && k !== 'agnostic_nms').sort();
  if (unknown.length) {
    throw new LibreYOLOError('config_unknown_key',
      `Unsupported predict option(s): ${unknown.join(', ')}. Supported options include conf, iou, imgsz, device, classes, max_det, save, stream, and vid_stride.`);
  }
  // Every value is checked by its rule before anything tests it ('false' is a string, and truthy).
  const v = Object.fromEntries((Object.keys(PREDICT_OPTIONS) as PredictOptionKey[]).map((k) => [k, read(raw, k)])) as { [K in PredictOptionKey]: ValueOf<K> | undefined };
  if (v.show) {
    throw new LibreYOLOError('config_unsupported', 'show=true opens a window per frame, which Node has no window system for. Use save=true and open the saved video (or image) instead.');
  }
  const tiling = v.tiling!;
  if (tiling && v.augment) throw new LibreYOLOError('config_conflict', 'tiling and augment cannot be used together. Disable one of them.');
  const iou = v.iou!;
  return {
    conf: v.conf!,
    iou,
    imgsz: normalizeImgsz(v.imgsz, model.imgszStride, warn),
    classes: normalizeClasses(v.classes, model.names),
    maxDet: v.max_det!,
    save: v.save!,
    outputPath: v.output_path,
    outputFormat: v.output_file_format!,
    device: v.device,
    batch: v.batch!,
    stream: v.stream!,
    tiling,
    overlapRatio: v.overlap_ratio!,
    tileMerge: resolveTileMerge(raw, tiling, iou),
    standardPred: v.perform_standard_pred!,
    augment: v.augment!,
    cudaGraph,
    projectDir: v.project_dir ?? process.cwd(),
    vidStride: v.vid_stride!,
    streamBuffer: v.stream_buffer!,
  };
}
