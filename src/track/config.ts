/**
 * ByteTrack settings with the original's `TrackConfig` names, defaults, checks and messages. Values
 * are not type-checked (a float passes for the integer fields), as in the original.
 */
import { LibreYOLOError } from '../errors.ts';
import { defaultWarn, type Warn } from '../util/warn.ts';

export interface TrackConfig {
  /** Detections with `conf >= this` are "high": matched first and allowed to start tracks. */
  track_high_thresh: number;
  /** Detections below this are dropped; `[low, high)` are matched only to tracks already Tracked. Also the detector's `conf` inside `track()`. */
  track_low_thresh: number;
  /** A leftover high detection starts a track only when `conf >= this`. */
  new_track_thresh: number;
  /** Largest cost (1 - IoU, score-fused) a first-stage match may have. */
  match_thresh: number;
  /** Largest cost of a second-stage (low detection) match. */
  match_thresh_low: number;
  /** Largest cost of a match between a leftover high detection and an unconfirmed track. */
  match_thresh_unconfirmed: number;
  /** Frames (at 30 fps) a lost track is kept for re-identification. */
  track_buffer: number;
  /** Scales the buffer: a lost track lives `int(track_buffer * frame_rate / 30)` frames. */
  frame_rate: number;
  /** Multiply the first stage's IoU by the detection score. */
  fuse_score: boolean;
  /** Matches a track needs before it is reported; above 1 new tracks start unconfirmed. */
  minimum_consecutive_frames: number;
}

export const TRACK_DEFAULTS: Readonly<TrackConfig> = Object.freeze({
  track_high_thresh: 0.25,
  track_low_thresh: 0.1,
  new_track_thresh: 0.25,
  match_thresh: 0.8,
  match_thresh_low: 0.5,
  match_thresh_unconfirmed: 0.7,
  track_buffer: 30,
  frame_rate: 30,
  fuse_score: true,
  minimum_consecutive_frames: 1,
});

export const TRACK_CONFIG_KEYS = Object.keys(TRACK_DEFAULTS) as Array<keyof TrackConfig>;

const UNIT_RANGE_KEYS = [
  'track_high_thresh', 'track_low_thresh', 'new_track_thresh', 'match_thresh', 'match_thresh_low', 'match_thresh_unconfirmed',
] as const;

function rangeError(message: string): LibreYOLOError {
  return new LibreYOLOError('config_range_error', message);
}

/** Fills defaults and checks the values in the original's order; throws `config_range_error`. */
export function resolveTrackConfig(overrides: Partial<TrackConfig> = {}): TrackConfig {
  const c: TrackConfig = { ...TRACK_DEFAULTS };
  for (const key of TRACK_CONFIG_KEYS) {
    const v = overrides[key];
    if (v !== undefined) (c as unknown as Record<string, unknown>)[key] = v;
  }
  for (const key of TRACK_CONFIG_KEYS) {
    const v = c[key];
    const ok = key === 'fuse_score' ? typeof v === 'boolean' : typeof v === 'number' && !Number.isNaN(v);
    if (!ok) throw new LibreYOLOError('config_type_error', `${key} must be a ${key === 'fuse_score' ? 'boolean' : 'number'}, got ${String(v)}`);
  }
  if (!(c.frame_rate > 0)) throw rangeError(`frame_rate must be > 0, got ${c.frame_rate}`);
  for (const key of UNIT_RANGE_KEYS) {
    if (!(c[key] >= 0 && c[key] <= 1)) throw rangeError(`${key} must be in [0, 1], got ${c[key]}`);
  }
  if (!(c.track_buffer >= 0)) throw rangeError(`track_buffer must be >= 0, got ${c.track_buffer}`);
  if (!(c.minimum_consecutive_frames >= 1)) throw rangeError(`minimum_consecutive_frames must be >= 1, got ${c.minimum_consecutive_frames}`);
  if (c.track_high_thresh < c.track_low_thresh) {
    throw rangeError(`track_high_thresh (${c.track_high_thresh}) must be >= track_low_thresh (${c.track_low_thresh})`);
  }
  return c;
}

/**
 * `TrackConfig.from_kwargs`: keeps the known keys and drops the others with one warning listing them
 * sorted, in the original's words (`Unknown tracking config keys (ignored): ['conf', 'persist']`).
 */
export function trackConfigFromKwargs(kwargs: Record<string, unknown>, warn: Warn = defaultWarn): TrackConfig {
  const known: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [k, v] of Object.entries(kwargs)) {
    if ((TRACK_CONFIG_KEYS as string[]).includes(k)) known[k] = v;
    else unknown.push(k);
  }
  if (unknown.length > 0) {
    warn(`Unknown tracking config keys (ignored): [${unknown.sort().map((k) => `'${k}'`).join(', ')}]`);
  }
  return resolveTrackConfig(known as Partial<TrackConfig>);
}

/** Frames a lost track survives: `int(track_buffer * frame_rate / 30)`. */
export function maxTimeLost(c: TrackConfig): number {
  return Math.trunc((c.track_buffer * c.frame_rate) / 30);
}
