/**
 * The CLI side of predict/track on a video: a progress bar while frames go through, then one summary
 * (frames, frames per second, tracks) and the saved video's path; with --json one object holding
 * every frame's detections (with `frame_idx`, `track_id` per box when tracking and each mask's
 * contour with a segment model), in the shape predict prints for images.
 */
import { basename } from 'node:path';
import type { Results } from '../predict/results.ts';
import type { VideoRun } from '../predict/video.ts';
import { jsonDetections } from './result-json.ts';
import { VideoProgress } from './video-progress.ts';

export interface VideoCliOptions {
  json: boolean;
  source: string;
  stride: number;
  /** Printed first (human output): which model runs. */
  header: string;
  /** Fields the JSON object starts with. */
  jsonHead: Record<string, unknown>;
}

function jsonFrame(r: Results): Record<string, unknown> {
  return {
    frame_idx: r.frame_idx,
    path: r.path,
    original_shape: r.orig_shape,
    detections: jsonDetections(r),
  };
}

export async function runVideoCli(run: VideoRun, o: VideoCliOptions): Promise<void> {
  const progress = o.json ? null : new VideoProgress(basename(o.source));
  const frames: Array<Record<string, unknown>> = [];
  const ids = new Set<number>();
  let count = 0;
  let detections = 0;
  const started = performance.now();
  try {
    for await (const r of run) {
      if (count === 0 && progress) {
        process.stdout.write(`${o.header}\n`);
        const info = run.info;
        progress.start(info && info.totalFrames > 0 ? Math.ceil(info.totalFrames / o.stride) : 0);
      }
      count++;
      detections += r.length;
      for (const id of r.track_id ?? []) ids.add(id);
      if (o.json) frames.push(jsonFrame(r));
      progress?.tick();
    }
  } finally {
    progress?.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ ...o.jsonHead, frames: count, results: frames, ...(run.saved_path ? { output_path: run.saved_path } : {}) })}\n`);
    return;
  }
  const tracks = run.info === null && ids.size === 0 ? '' : ids.size > 0 ? `, ${ids.size} track id(s)` : '';
  process.stdout.write(`${count} frame(s) in ${seconds.toFixed(2)}s (${(count / Math.max(seconds, 1e-9)).toFixed(1)} frames/s), ${detections} detection(s)${tracks}\n`);
  if (run.saved_path) process.stdout.write(`Video saved to ${run.saved_path}\n`);
}
