/**
 * ByteTrack as LibreYOLO runs it: high detections are matched to every live and lost track first
 * (score-fused IoU), low ones then keep still-tracked objects alive, leftovers confirm tentative tracks
 * or start new ones, and lost tracks expire after the buffer. It sees only boxes, scores and classes,
 * so it serves any detector.
 */
import { maxTimeLost, resolveTrackConfig, type TrackConfig } from './config.ts';
import { covarianceDiagonal, initiate, isDegenerate, meanToXyxy, predict, update, xyxyToXyah, type KalmanState } from './kalman.ts';
import { assign, iou, iouCost, type Box } from './matching.ts';

export type TrackState = 'tracked' | 'lost' | 'removed';

interface Detection {
  box: Box;
  score: number;
  cls: number;
  /** Row in the frame's unfiltered input. */
  index: number;
}

class Track {
  state: TrackState = 'tracked';
  isActivated = false;
  hits = 0;
  startFrame = 0;
  frameId = 0;
  score: number;
  cls: number;
  detIndex: number;
  kalman: KalmanState;

  constructor(readonly id: number, det: Detection, frame: number) {
    this.kalman = initiate(xyxyToXyah(...det.box));
    this.score = det.score;
    this.cls = det.cls;
    this.detIndex = det.index;
    this.hits = 1;
    this.startFrame = frame;
    this.frameId = frame;
    this.isActivated = true;
  }

  get box(): Box { return meanToXyxy(this.kalman.mean); }

  /** A match (any stage): the filter takes the detection and the track reports it. */
  matched(det: Detection, frame: number): void {
    const z = xyxyToXyah(...det.box);
    if (this.state === 'lost' && isDegenerate(this.kalman)) this.kalman = initiate(z);
    else update(this.kalman, z);
    this.state = 'tracked';
    this.isActivated = true;
    this.frameId = frame;
    this.score = det.score;
    this.cls = det.cls;
    this.detIndex = det.index;
    this.hits += 1;
  }
}

/** A track's internal state after a frame (what the parity fixture records). */
export interface TrackSnapshot {
  id: number;
  state: TrackState;
  is_activated: boolean;
  hits: number;
  start_frame: number;
  frame_id: number;
  /** Kalman mean (cx, cy, a, h, vcx, vcy, va, vh). */
  mean: number[];
  covariance_diagonal: number[];
}

/** One output row: `[track_id, det_index, x1, y1, x2, y2, conf, cls]` (the detection's own values). */
export type TrackRow = [number, number, number, number, number, number, number, number];

/** Detections as rows `[x1, y1, x2, y2, conf, cls]`, or a flat row-major array of `rows` such rows. */
export type DetectionsInput = ReadonlyArray<ArrayLike<number>> | Float32Array | Float64Array;

const DUPLICATE_IOU = 0.85;

function uniqueById(tracks: Track[]): Track[] {
  const seen = new Set<number>();
  return tracks.filter((t) => !seen.has(t.id) && (seen.add(t.id), true));
}

function readDetections(dets: DetectionsInput, rows?: number): number[][] {
  if (dets instanceof Float32Array || dets instanceof Float64Array) {
    const n = rows ?? dets.length / 6;
    if (!Number.isInteger(n) || n < 0 || n * 6 > dets.length) {
      throw new RangeError(`ByteTracker.update: a flat array of ${dets.length} values does not hold ${rows ?? 'whole'} rows of 6 [x1, y1, x2, y2, conf, cls]`);
    }
    return Array.from({ length: n }, (_, i) => Array.from(dets.subarray(i * 6, i * 6 + 6)));
  }
  return dets.map((row, i) => {
    if (row.length < 6) throw new RangeError(`ByteTracker.update: detection ${i} has ${row.length} values, expected [x1, y1, x2, y2, conf, cls]`);
    return Array.from(row).slice(0, 6);
  });
}

export class ByteTracker {
  readonly config: TrackConfig;
  private readonly maxTimeLost: number;
  private trackedTracks: Track[] = [];
  private lostTracks: Track[] = [];
  private frame = 0;
  private idCounter = 0;

  /** Keys and defaults as `TrackConfig`; a bad value throws (`config_range_error`). */
  constructor(config: Partial<TrackConfig> = {}) {
    this.config = resolveTrackConfig(config);
    this.maxTimeLost = maxTimeLost(this.config);
  }

  /** Forgets every track; ids and the frame counter restart at 1. */
  reset(): void {
    this.trackedTracks = [];
    this.lostTracks = [];
    this.frame = 0;
    this.idCounter = 0;
  }

  /** Frames seen since construction or the last `reset()`. */
  get frameCount(): number { return this.frame; }
  /** The last id handed out (every birth takes one, also tracks later removed). */
  get lastId(): number { return this.idCounter; }
  get tracked(): TrackSnapshot[] { return this.trackedTracks.map(snapshot); }
  get lost(): TrackSnapshot[] { return this.lostTracks.map(snapshot); }

  /** One frame: returns the reported tracks in the tracker's list order. */
  update(dets: DetectionsInput, rows?: number): TrackRow[] {
    const c = this.config;
    const frame = ++this.frame;
    const input = readDetections(dets, rows);
    const high: Detection[] = [];
    const low: Detection[] = [];
    input.forEach((r, index) => {
      const score = r[4]!;
      if (!(score >= c.track_low_thresh)) return;
      const det: Detection = { box: [r[0]!, r[1]!, r[2]!, r[3]!], score, cls: Math.trunc(r[5]!), index };
      (score >= c.track_high_thresh ? high : low).push(det);
    });

    const previousLost = this.lostTracks;
    for (const t of [...this.trackedTracks, ...previousLost]) {
      if (t.state !== 'tracked') t.kalman.mean[7] = 0;
      predict(t.kalman);
    }
    const unconfirmed = this.trackedTracks.filter((t) => !t.isActivated);
    const confirmed = this.trackedTracks.filter((t) => t.isActivated);
    const confirmedIds = new Set(confirmed.map((t) => t.id));
    const pool = [...confirmed, ...previousLost.filter((t) => !confirmedIds.has(t.id))];

    // Stage 1: high detections against every confirmed and lost track, IoU fused with the score.
    const cost1 = iouCost(pool.map((t) => t.box), high.map((d) => d.box));
    if (c.fuse_score && high.length > 0) {
      for (let i = 0; i < pool.length; i++) {
        for (let j = 0; j < high.length; j++) cost1[i * high.length + j] = 1 - (1 - cost1[i * high.length + j]!) * high[j]!.score;
      }
    }
    const m1 = assign(cost1, pool.length, high.length, c.match_thresh);
    for (const [i, j] of m1.matches) pool[i]!.matched(high[j]!, frame);

    // Stage 2: low detections only keep still-tracked objects alive; the rest of them are lost.
    const leftover = m1.unmatchedRows.map((i) => pool[i]!).filter((t) => t.state === 'tracked');
    const m2 = assign(iouCost(leftover.map((t) => t.box), low.map((d) => d.box)), leftover.length, low.length, c.match_thresh_low);
    for (const [i, j] of m2.matches) leftover[i]!.matched(low[j]!, frame);
    for (const i of m2.unmatchedRows) leftover[i]!.state = 'lost';

    // Stage 3: leftover high detections confirm tentative tracks; an unconfirmed miss is removed.
    const highLeft = m1.unmatchedCols.map((j) => high[j]!);
    const m3 = assign(iouCost(unconfirmed.map((t) => t.box), highLeft.map((d) => d.box)), unconfirmed.length, highLeft.length, c.match_thresh_unconfirmed);
    for (const [i, j] of m3.matches) unconfirmed[i]!.matched(highLeft[j]!, frame);
    for (const i of m3.unmatchedRows) unconfirmed[i]!.state = 'removed';

    const births: Track[] = [];
    for (const j of m3.unmatchedCols) {
      const det = highLeft[j]!;
      if (!(det.score >= c.new_track_thresh)) continue;
      const track = new Track(++this.idCounter, det, frame);
      if (c.minimum_consecutive_frames > 1) track.isActivated = false;
      births.push(track);
    }

    // Expiry looks at the lost list as it was before this frame (tracks lost just now wait a frame).
    for (const t of previousLost) if (t.state === 'lost' && frame - t.frameId > this.maxTimeLost) t.state = 'removed';

    let tracked = uniqueById([...pool, ...unconfirmed, ...births].filter((t) => t.state === 'tracked'));
    const trackedIds = new Set(tracked.map((t) => t.id));
    let lost = uniqueById([...pool, ...previousLost].filter((t) => t.state === 'lost' && !trackedIds.has(t.id)));

    // Two tracks on one object (IoU > 0.85 between a tracked and a lost one): the older survives, the
    // tracked one on a tie; the other simply leaves the lists.
    const dropped = new Set<Track>();
    const trackedBoxes = tracked.map((t) => t.box);
    const lostBoxes = lost.map((t) => t.box);
    for (let i = 0; i < tracked.length; i++) {
      for (let j = 0; j < lost.length; j++) {
        if (!(iou(trackedBoxes[i]!, lostBoxes[j]!) > DUPLICATE_IOU)) continue;
        const a = tracked[i]!, b = lost[j]!;
        dropped.add(a.frameId - a.startFrame >= b.frameId - b.startFrame ? b : a);
      }
    }
    if (dropped.size > 0) {
      tracked = tracked.filter((t) => !dropped.has(t));
      lost = lost.filter((t) => !dropped.has(t));
    }
    this.trackedTracks = tracked;
    this.lostTracks = lost;

    const out: TrackRow[] = [];
    for (const t of tracked) {
      if (!t.isActivated || t.hits < c.minimum_consecutive_frames) continue;
      const r = input[t.detIndex]!;
      out.push([t.id, t.detIndex, r[0]!, r[1]!, r[2]!, r[3]!, r[4]!, r[5]!]);
    }
    return out;
  }
}

function snapshot(t: Track): TrackSnapshot {
  return {
    id: t.id, state: t.state, is_activated: t.isActivated, hits: t.hits, start_frame: t.startFrame, frame_id: t.frameId,
    mean: Array.from(t.kalman.mean), covariance_diagonal: covarianceDiagonal(t.kalman),
  };
}
