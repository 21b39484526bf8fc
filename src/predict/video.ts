/**
 * Predict (and track) over a video: frames stream from the decoder through the same chunked forward
 * pipeline as images (batch stacks consecutive frames, tiling and TTA per frame), one `Results` per
 * kept frame with its `frame_idx`, in order. With a tracker each result becomes the tracker's output;
 * with a writer each frame is drawn and appended to the annotated video, which gets its final name
 * only when the run ends (finished or stopped early by the caller; removed on an error).
 */
import type { RgbImage } from '../data/rgb-image.ts';
import type { SourceItem } from '../data/sources.ts';
import { ByteTracker } from '../track/byte-tracker.ts';
import { LibreYOLOError } from '../errors.ts';
import type { VideoFrame } from '../video/reader.ts';
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { decodeImage, fromRawPixels, isRawPixels, type RawPixels } from '../data/image.ts';
import { pathStem, urlStem } from '../data/sources.ts';
import type { Warn } from '../util/warn.ts';
import { openVideo, type VideoInfo } from '../video/reader.ts';
import { strideRate, VideoWriter, videoTarget, type VideoTarget } from '../video/writer.ts';
import { incrementDir } from './save.ts';
import { annotateFrame } from './frame-draw.ts';
import type { ResolvedPredictOptions } from './options.ts';
import { runPredict, type PredictContext } from './predictor.ts';
import { trackedResults } from './tracked.ts';
import { Results } from './results.ts';

export interface VideoRunPlan {
  /** `Results.path` of every frame: the source for predict, null for track (as the original). */
  resultPath: string | null;
  /** How messages name the source. */
  label: string;
  /** Detections are handed to this tracker frame by frame. */
  tracker: ByteTracker | null;
  /** Where the annotated video goes, and at what rate. */
  save: { target: VideoTarget; rate: string } | null;
  /** Called with the saved video's final path. */
  onSaved?(path: string): void;
}

export async function* runVideo(ctx: PredictContext, frames: AsyncIterable<VideoFrame>, plan: VideoRunPlan, opts: ResolvedPredictOptions): AsyncGenerator<Results> {
  // Sized by the first frame (caller-supplied frames have no size before it); a bad path fails there.
  let writer: VideoWriter | null = null;
  const pending: VideoFrame[] = [];
  async function* items(): AsyncGenerator<SourceItem> {
    for await (const frame of frames) {
      pending.push(frame);
      const image: RgbImage = frame.image;
      yield {
        kind: 'pixels', path: plan.resultPath, label: `${plan.label} frame ${frame.index}`, stem: 'frame', saveStem: () => 'frame',
        load: async () => image,
      };
    }
  }
  let failed = false;
  try {
    for await (const r of runPredict(ctx, items(), { ...opts, save: false }, false)) {
      const frame = pending.shift()!;
      r.frame_idx = frame.index;
      const result = plan.tracker ? trackedResults(r, plan.tracker) : r;
      if (plan.save) {
        writer ??= await VideoWriter.open(plan.save.target, frame.image.width, frame.image.height, plan.save.rate);
        if (frame.image.width !== writer.width || frame.image.height !== writer.height) {
          throw new LibreYOLOError('data_invalid', `Frame ${frame.index} of ${plan.label} is ${frame.image.width}x${frame.image.height}, but the video being saved is ${writer.width}x${writer.height}: a saved video keeps one size. Pass frames of one size, or save=false.`);
        }
        await writer.write(await annotateFrame(frame.image, result));
      }
      yield result;
    }
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    if (writer) {
      if (failed) await writer.abort();
      else plan.onSaved?.(await writer.finish());
    }
  }
}

/** A video run: iterate it once for the results; `info` is set once the source is open, `saved_path` once the video is written. */
export class VideoRun implements AsyncIterable<Results> {
  info: VideoInfo | null = null;
  saved_path: string | null = null;
  private started = false;
  constructor(private readonly start: (run: VideoRun) => AsyncGenerator<Results>) {}
  [Symbol.asyncIterator](): AsyncGenerator<Results> {
    if (this.started) throw new LibreYOLOError('config_conflict', 'This video run was already iterated; call predict() or track() again to read the source again.');
    this.started = true;
    return this.start(this);
  }
}

async function isDirectory(p: string): Promise<boolean> {
  try { return (await stat(p)).isDirectory(); } catch { return false; }
}

/**
 * Where a saved video goes: `output_path` as a file (its suffix picks the container) or, when it is a
 * folder (existing, ending in a separator, or without suffix), `<stem>.mp4` inside it; else predict's
 * new `runs/detect/predict[N]/<stem>.mp4` or track's `runs/track/<stem>[N].mp4`.
 */
export async function videoSaveTarget(mode: 'predict' | 'track', stem: string, outputPath: string | undefined, projectDir: string): Promise<VideoTarget> {
  if (outputPath !== undefined) {
    const p = resolve(projectDir, outputPath);
    return videoTarget(p, /[\\/]$/.test(outputPath) || await isDirectory(p), stem);
  }
  if (mode === 'predict') return { dir: await incrementDir(join(projectDir, 'runs', 'detect'), 'predict'), stem, ext: '.mp4' };
  return { dir: join(projectDir, 'runs', 'track'), stem, ext: '.mp4' };
}

/** The file-name stem of a video source: `clip` for `a/clip.mp4` or `rtsp://h/cam/clip`, `video0` for `/dev/video0`. */
export function videoStem(source: string): string {
  return (/^[a-z][a-z0-9+.-]*:\/\//i.test(source) ? urlStem(source) : pathStem(source)) || 'video';
}

export interface VideoSourceRequest {
  mode: 'predict' | 'track';
  tracker: ByteTracker | null;
  save: boolean;
  outputPath: string | undefined;
  warn: Warn;
  /** Called once the source is open (predict's large-video warning). */
  onOpen?(info: VideoInfo): void;
}

/** Predict or track over a video file or live stream, filling in `run` as it goes. */
export async function* videoSourceResults(run: VideoRun, ctx: PredictContext, source: string, opts: ResolvedPredictOptions, req: VideoSourceRequest): AsyncGenerator<Results> {
  const reader = await openVideo(source, { stride: opts.vidStride, streamBuffer: opts.streamBuffer, queueFrames: Math.max(4, 2 * opts.batch), warn: req.warn });
  try {
    run.info = reader.info;
    req.onOpen?.(reader.info);
    const target = req.save ? await videoSaveTarget(req.mode, videoStem(source), req.outputPath, opts.projectDir) : null;
    yield* runVideo(ctx, reader, {
      resultPath: req.mode === 'predict' ? source : null, label: source, tracker: req.tracker,
      save: target && { target, rate: strideRate(reader.info.rate, opts.vidStride) }, onSaved: (p) => { run.saved_path = p; },
    }, opts);
  } finally {
    await reader.close();
  }
}

/** One frame the caller supplies: encoded bytes or raw pixels. */
export type FrameInput = Uint8Array | RawPixels;

async function* callerFrames(inputs: Iterable<FrameInput> | AsyncIterable<FrameInput>, stride: number): AsyncGenerator<VideoFrame> {
  let index = 0;
  for await (const input of inputs) {
    const k = index++;
    if (k % stride !== 0) continue;
    const label = `frame ${k}`;
    if (input instanceof Uint8Array) yield { image: await decodeImage(input, label), index: k };
    else if (isRawPixels(input)) yield { image: fromRawPixels(input, label), index: k };
    else throw new LibreYOLOError('config_type_error', `track() frame ${k} is ${input === null ? 'null' : typeof input}: pass a video path or URL, a Buffer/Uint8Array, raw pixels { data, width, height, channels }, or an (async) iterable of these.`);
  }
}

/** Tracks frames the caller hands over one by one (saved at `rate` frames per second). */
export async function* framesResults(
  run: VideoRun, ctx: PredictContext, inputs: Iterable<FrameInput> | AsyncIterable<FrameInput>, opts: ResolvedPredictOptions, req: VideoSourceRequest & { rate: number },
): AsyncGenerator<Results> {
  const target = req.save ? await videoSaveTarget(req.mode, 'frames', req.outputPath, opts.projectDir) : null;
  yield* runVideo(ctx, callerFrames(inputs, opts.vidStride), {
    resultPath: null, label: 'the frames', tracker: req.tracker,
    save: target && { target, rate: strideRate(String(req.rate), opts.vidStride) }, onSaved: (p) => { run.saved_path = p; },
  }, opts);
}
