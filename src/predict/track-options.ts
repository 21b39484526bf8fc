/**
 * `track()` options: the detector controls, the saving controls and ours (`persist`), with every
 * other key handed to `TrackConfig` as the original does (unknown ones dropped with one warning, so
 * Ultralytics-style `conf=0.3` is named as ignored). The detector runs at `track_low_thresh`.
 */
import { LibreYOLOError } from '../errors.ts';
import { resolveTrackConfig, trackConfigFromKwargs, type TrackConfig } from '../track/config.ts';
import type { Warn } from '../util/warn.ts';
import { flag, type PredictOptions } from './options.ts';

/** Detector keys passed on to predict's option checks, with predict's meaning and defaults. */
const DETECTOR_KEYS = ['iou', 'imgsz', 'classes', 'max_det', 'vid_stride', 'stream_buffer', 'batch', 'device', 'project_dir', 'show', 'half', 'cuda_graph'] as const satisfies ReadonlyArray<keyof PredictOptions>;

export interface TrackOptions extends Partial<TrackConfig>, Pick<PredictOptions, typeof DETECTOR_KEYS[number]> {
  /** Write the annotated video: `runs/track/<stem>.mp4` (`<stem>2.mp4`, ... when taken). */
  save?: boolean;
  /** The saved video's file path (or a folder for `<stem>.mp4`). */
  output_path?: string;
  /** A ready `TrackConfig`; tracker keys beside it are then ignored (with a warning). */
  tracker_config?: Partial<TrackConfig>;
  /** Ours: keep the model's tracker (and its ids) across `track()` calls. Default false: ids restart at 1 per call. */
  persist?: boolean;
  /** Ignored as in the original (its first-stage threshold is `track_high_thresh`); warns. */
  track_conf?: number;
  /** Ignored as in the original (no test-time augmentation while tracking); warns. */
  augment?: boolean;
}

/** Keys `track()` itself reads; everything else is a `TrackConfig` key or unknown. */
const CALL_KEYS = new Set<string>([...DETECTOR_KEYS, 'save', 'output_path', 'tracker_config', 'persist', 'track_conf', 'augment']);

export interface SplitTrackOptions {
  config: TrackConfig;
  detector: PredictOptions;
  save: boolean;
  outputPath: string | undefined;
  persist: boolean;
}

export function splitTrackOptions(raw: Record<string, unknown>, warn: Warn): SplitTrackOptions {
  const trackerKeys: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) if (v !== undefined && !CALL_KEYS.has(k)) trackerKeys[k] = v;
  let config: TrackConfig;
  if (raw.tracker_config !== undefined) {
    if (typeof raw.tracker_config !== 'object' || raw.tracker_config === null) {
      throw new LibreYOLOError('config_type_error', `tracker_config must be an object of TrackConfig keys, got ${JSON.stringify(raw.tracker_config)}`);
    }
    const ignored = Object.keys(trackerKeys).sort();
    if (ignored.length) warn(`tracker_config is given, so these keys are ignored: [${ignored.map((k) => `'${k}'`).join(', ')}]`);
    config = resolveTrackConfig(raw.tracker_config as Partial<TrackConfig>);
  } else {
    config = trackConfigFromKwargs(trackerKeys, warn);
  }
  if (raw.track_conf !== undefined) warn('track_conf is ignored by track(), as in the original; the first-stage threshold is track_high_thresh.');
  if (raw.augment === true) warn('augment is ignored by track(), as in the original: tracking runs without test-time augmentation.');
  const detector: Record<string, unknown> = { conf: config.track_low_thresh };
  for (const k of DETECTOR_KEYS) if (raw[k] !== undefined) detector[k] = raw[k];
  const bool = (k: string): boolean => flag(k, raw[k]);
  return {
    config, detector: detector as PredictOptions, save: bool('save'), persist: bool('persist'),
    outputPath: raw.output_path === undefined ? undefined : String(raw.output_path),
  };
}

/** The original's task gate: only box tasks can be tracked. */
export function checkTrackTask(task: string): void {
  const refused: Record<string, string> = {
    classify: 'Tracking does not support classification models. Use predict().',
    obb: 'Tracking does not support oriented boxes yet. Use predict() for OBB models.',
    point: 'Tracking does not support point results yet. Use predict() for point models.',
  };
  if (refused[task]) throw new LibreYOLOError('config_unsupported', refused[task]);
}
