/**
 * Frames of a video file or live stream, decoded by an ffmpeg child process into packed RGB over a
 * pipe (`-f rawvideo -pix_fmt rgb24`: the same bytes, channels swapped, as the bgr24 frames OpenCV
 * returns with Debian's libav). Every frame is decoded and counted; the stride keeps frames 0, s, 2s, ...
 * Decoding runs ahead of the consumer into a bounded queue: for files and `stream_buffer: true` the
 * pipe is paused when the queue is full (ffmpeg then waits), for live sources with
 * `stream_buffer: false` the queue holds only the newest frame, so results stay current.
 */
import { integer } from '../util/options.ts';
import type { ChildProcess } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { LibreYOLOError } from '../errors.ts';
import type { RgbImage } from '../data/rgb-image.ts';
import { fileKind, notRegularFile } from '../util/fs.ts';
import { describeLimit, limit, raiseAdvice } from '../util/limits.ts';
import { defaultWarn, type Warn } from '../util/warn.ts';
import { exited, ffmpegPath, probeVideo, rateValue, spawnTool, StderrLog } from './ffmpeg.ts';
import { isLiveSource } from './sources.ts';

export interface VideoFrame {
  image: RgbImage;
  /** 0-based index of the frame in the file or stream, counting the frames the stride skips. */
  index: number;
}

export interface VideoInfo {
  source: string;
  live: boolean;
  width: number;
  height: number;
  /** Frames per second (30 when the source does not say). */
  fps: number;
  /** The same rate as an exact fraction (`30000/1001`), for the writer. */
  rate: string;
  /** Frames in the file by its metadata (an estimate; 0 when unknown, always 0 for live sources). */
  totalFrames: number;
}

export interface VideoReadOptions {
  /** Keep every `stride`-th frame (an integer >= 1). Default 1. */
  stride?: number;
  /** Live sources: queue every frame (true) or keep only the newest (false, default). */
  streamBuffer?: boolean;
  /**
   * Decoded frames held ahead of the consumer at least (default 4); small frames get more, up to
   * `QUEUE_MAX_FRAMES` within `QUEUE_BYTES`, so a decoder the scheduler holds back for a while
   * (a busy machine) does not leave the network waiting.
   */
  queueFrames?: number;
  /** Live sources: how many times a stream that ends is reopened before the reader ends. Default 3. */
  reconnects?: number;
  warn?: Warn;
}

const RECONNECT_DELAY_MS = 500;
export const QUEUE_BYTES = 32 * 1024 * 1024;
export const QUEUE_MAX_FRAMES = 32;

/** Frames the reader decodes ahead: at least `min`, more while they fit in `QUEUE_BYTES`. */
export function queueCapacity(frameBytes: number, min = 4): number {
  return Math.max(1, min, Math.min(QUEUE_MAX_FRAMES, Math.floor(QUEUE_BYTES / frameBytes)));
}

/** Output size and rate from ffmpeg's description of its rawvideo output stream. */
function parseOutputStream(stderr: string): { width: number; height: number; fps: number | null } | null {
  const out = stderr.indexOf('Output #0');
  if (out < 0) return null;
  const line = /Stream #0:0[^\n]*Video: rawvideo[^\n]*\n/.exec(stderr.slice(out));
  if (!line) return null;
  const size = /\s(\d+)x(\d+)[\s,]/.exec(line[0]);
  if (!size) return null;
  const fps = /,\s*([\d.]+)\s*fps/.exec(line[0]);
  return { width: Number(size[1]), height: Number(size[2]), fps: fps ? Number(fps[1]) : null };
}

function openError(info: { source: string; live: boolean }, reason: string): LibreYOLOError {
  return info.live
    ? new LibreYOLOError('stream_unavailable', `Cannot open live stream: ${info.source} (${reason}). Check that the stream is running and the URL or device is right.`)
    : new LibreYOLOError('video_unreadable', `Cannot open video file: ${info.source} (${reason}). Pass a video ffmpeg can decode (for example an .mp4 with H.264 or MPEG-4 video).`);
}

function stalled(source: string, ms: number): LibreYOLOError {
  return new LibreYOLOError('stream_timeout',
    `No frame from ${source} for ${describeLimit('streamIdleTimeoutMs', ms)}: the stream stopped sending. ${raiseAdvice('streamIdleTimeoutMs')}`);
}

interface Decoder {
  child: ChildProcess;
  width: number;
  height: number;
  fps: number | null;
  stderr: StderrLog;
  /** stdout bytes that arrived before the size was known */
  early: Buffer[];
  /** Stops collecting into `early` (the pipe stays paused until the reader resumes it). */
  stopEarly(): void;
}

/** Starts ffmpeg and waits until it has said its output size (or failed). */
async function startDecoder(info: { source: string; live: boolean }, timeoutMs: number): Promise<Decoder> {
  const input = info.live && !/^\/dev\//.test(info.source) ? ['-rw_timeout', String(timeoutMs * 1000)] : [];
  const child = await spawnTool(ffmpegPath(), [
    '-hide_banner', '-nostdin', '-nostats', '-loglevel', 'info', ...input, '-i', info.source,
    '-an', '-sn', '-dn', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1',
  ]);
  const stderr = new StderrLog();
  const early: Buffer[] = [];
  const onData = (c: Buffer): void => { early.push(c); };
  child.stdout!.on('data', onData);
  try {
    const header = await new Promise<{ width: number; height: number; fps: number | null }>((resolveHeader, reject) => {
      const timer = setTimeout(() => reject(stalled(info.source, timeoutMs)), timeoutMs);
      const done = (): void => { clearTimeout(timer); child.stderr!.off('data', onErr); child.off('close', onClose); };
      const onErr = (c: Buffer): void => {
        stderr.push(c);
        const h = parseOutputStream(stderr.start);
        if (h) { done(); resolveHeader(h); }
      };
      const onClose = (code: number | null): void => {
        done();
        reject(openError(info, stderr.reason(info.source) || (code === 0 ? 'it holds no video frames' : `ffmpeg exited with ${code}`)));
      };
      child.stderr!.on('data', onErr);
      child.once('close', onClose);
    });
    child.stderr!.on('data', (c: Buffer) => stderr.push(c));
    // Paused, still collecting, until a reader takes over: the caller may wait (for ffprobe) before it
    // attaches, and a flowing pipe without a listener would drop frames meanwhile.
    child.stdout!.pause();
    return { child, ...header, stderr, early, stopEarly: () => { child.stdout!.off('data', onData); } };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
}

/** Opens a video file or live source; frames come from iterating the reader (once). */
export async function openVideo(source: string, options: VideoReadOptions = {}): Promise<VideoReader> {
  const live = isLiveSource(source);
  const stride = options.stride ?? 1;
  integer({ min: 1 }).check('vid_stride', stride);
  let rate: string | null = null;
  let totalFrames = 0;
  if (!live) {
    try {
      const st = await stat(source);
      if (!st.isFile()) throw notRegularFile(source, fileKind(st), 'video');
    } catch (e) {
      if (e instanceof LibreYOLOError) throw e;
      const where = isAbsolute(source) ? '' : ` Nothing exists at ${resolve(source)}.`;
      throw new LibreYOLOError('source_not_found', `Cannot open video file: ${source} (not found).${where} Pass an existing video file.`);
    }
  }
  const timeoutMs = limit('streamIdleTimeoutMs');
  // ffprobe and the decoder start together: each is a process whose start (loading libav*) costs
  // more than several frames' forward, so a run waits for the slower of the two, not their sum.
  const [probed, started] = await Promise.allSettled([live ? Promise.resolve(null) : probeVideo(source), startDecoder({ source, live }, timeoutMs)]);
  if (probed.status === 'rejected' || (probed.value !== null && 'error' in probed.value)) {
    if (started.status === 'fulfilled') started.value.child.kill('SIGKILL');
    if (probed.status === 'rejected') throw probed.reason;
    throw openError({ source, live }, (probed.value as { error: string }).error);
  }
  if (started.status === 'rejected') throw started.reason;
  const decoder = started.value;
  if (probed.value !== null) {
    rate = probed.value.rate;
    totalFrames = probed.value.frames;
  }
  const pixels = decoder.width * decoder.height;
  if (pixels > limit('imagePixels')) {
    decoder.child.kill('SIGKILL');
    throw new LibreYOLOError('source_too_large',
      `Frames of ${source} are ${decoder.width}x${decoder.height} = ${pixels} pixels, above the image pixel limit (${describeLimit('imagePixels')}). ${raiseAdvice('imagePixels')}`);
  }
  if (rate === null) {
    // No rate from the container (or a live source): ffmpeg's own estimate, else 30 as the original.
    if (decoder.fps !== null && decoder.fps > 0) rate = String(decoder.fps);
    else {
      if (!live) (options.warn ?? defaultWarn)('Could not detect video FPS, defaulting to 30.0');
      rate = '30';
    }
  }
  const info: VideoInfo = { source, live, width: decoder.width, height: decoder.height, fps: rateValue(rate), rate, totalFrames };
  return new VideoReader(info, decoder, { stride, timeoutMs, ...options });
}

export class VideoReader implements AsyncIterable<VideoFrame> {
  /** Frames a live source produced that were replaced by newer ones before they were read. */
  dropped = 0;
  private readonly stride: number;
  private readonly dropStale: boolean;
  private readonly capacity: number;
  private readonly timeoutMs: number;
  private readonly warn: Warn;
  private reconnectsLeft: number;
  private readonly frameBytes: number;
  private readonly queue: VideoFrame[] = [];
  private waiter: (() => void) | null = null;
  private current: Uint8Array | null = null;
  private filled = 0;
  private scratch: Uint8Array | null = null;
  private index = 0;
  private decoded = 0;
  private ended = false;
  private failure: unknown = null;
  private closed = false;
  private iterated = false;
  private decoder: Decoder;

  constructor(readonly info: VideoInfo, decoder: Decoder, o: VideoReadOptions & { stride: number; timeoutMs: number }) {
    this.stride = o.stride;
    this.dropStale = info.live && !o.streamBuffer;
    this.timeoutMs = o.timeoutMs;
    this.warn = o.warn ?? defaultWarn;
    this.reconnectsLeft = info.live ? o.reconnects ?? 3 : 0;
    this.frameBytes = info.width * info.height * 3;
    this.capacity = queueCapacity(this.frameBytes, o.queueFrames);
    this.decoder = decoder;
    this.attach(decoder);
  }

  private attach(d: Decoder): void {
    d.stopEarly();
    for (const c of d.early) this.onData(c);
    d.early.length = 0;
    d.child.stdout!.on('data', (c: Buffer) => this.onData(c));
    if (this.dropStale || this.queue.length < this.capacity) d.child.stdout!.resume();
    void exited(d.child).then((code) => this.onExit(d, code));
  }

  private onData(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length) {
      const keep = this.index % this.stride === 0;
      if (this.current === null) {
        // Unzeroed: every byte is written from the pipe before the frame is handed out.
        this.current = keep ? Buffer.allocUnsafeSlow(this.frameBytes) : (this.scratch ??= Buffer.allocUnsafeSlow(this.frameBytes));
        this.filled = 0;
      }
      const n = Math.min(this.frameBytes - this.filled, chunk.length - offset);
      this.current.set(chunk.subarray(offset, offset + n), this.filled);
      this.filled += n;
      offset += n;
      if (this.filled < this.frameBytes) break;
      if (keep) this.push({ image: { data: this.current, width: this.info.width, height: this.info.height }, index: this.index });
      this.current = null;
      this.index++;
      this.decoded++;
    }
  }

  private push(frame: VideoFrame): void {
    if (this.dropStale && this.queue.length > 0) {
      this.dropped += this.queue.length;
      this.queue.length = 0;
    }
    this.queue.push(frame);
    if (!this.dropStale && this.queue.length >= this.capacity) this.decoder.child.stdout!.pause();
    this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  private async onExit(d: Decoder, code: number | string): Promise<void> {
    if (this.closed || d !== this.decoder) return;
    const reason = d.stderr.reason(this.info.source);
    if (this.info.live) {
      if (this.reconnectsLeft > 0) {
        this.reconnectsLeft--;
        this.warn(`Live stream ${this.info.source} ended (${reason || `ffmpeg exited with ${code}`}); reconnecting (${this.reconnectsLeft} attempt(s) left after this one)`);
        await new Promise((r) => setTimeout(r, RECONNECT_DELAY_MS));
        if (this.closed) return;
        try {
          const next = await startDecoder(this.info, this.timeoutMs);
          if (next.width !== this.info.width || next.height !== this.info.height) {
            next.child.kill('SIGKILL');
            throw new LibreYOLOError('stream_unavailable', `Live stream ${this.info.source} came back at ${next.width}x${next.height} instead of ${this.info.width}x${this.info.height}; open it again to read the new size.`);
          }
          if (this.closed) { next.child.kill('SIGKILL'); return; }
          this.current = null;
          this.decoder = next;
          this.attach(next);
          return;
        } catch (err) {
          if (err instanceof LibreYOLOError && err.code === 'stream_unavailable' && /came back/.test(err.message)) this.failure = err;
          else this.warn(`Live stream ${this.info.source} did not come back (${err instanceof Error ? err.message : String(err)}); stopping.`);
        }
      }
    } else if (code !== 0) {
      this.failure = new LibreYOLOError('video_unreadable',
        `Decoding ${this.info.source} failed after ${this.decoded} frame(s): ${reason || `ffmpeg exited with ${code}`}.`);
    } else if (this.decoded === 0) {
      this.failure = openError(this.info, 'it holds no video frames');
    } else if (this.decoded < this.info.totalFrames && d.stderr.complaints().length > 0) {
      // As the original, a file whose frames stop early ends the run early; unlike it, we say so.
      this.warn(`Decoding ${this.info.source} ended after ${this.decoded} of the ${this.info.totalFrames} frames it states (${d.stderr.complaints().at(-1)}): the file may be truncated or damaged.`);
    }
    this.ended = true;
    this.wake();
  }

  /** The next kept frame, or null at the end of the video (a live source: once it is gone for good). */
  async next(): Promise<VideoFrame | null> {
    for (;;) {
      if (this.closed) return null;
      const frame = this.queue.shift();
      if (frame) {
        if (!this.dropStale && this.queue.length < this.capacity) this.decoder.child.stdout!.resume();
        return frame;
      }
      if (this.failure) throw this.failure;
      if (this.ended) return null;
      await new Promise<void>((resolveWait, reject) => {
        const timer = setTimeout(() => {
          this.waiter = null;
          reject(stalled(this.info.source, this.timeoutMs));
        }, this.timeoutMs);
        this.waiter = () => { clearTimeout(timer); resolveWait(); };
      }).catch(async (err: unknown) => {
        await this.close();
        throw err;
      });
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<VideoFrame> {
    if (this.iterated) throw new Error('A VideoReader can be iterated once; open the video again to read it again.');
    this.iterated = true;
    try {
      for (let f = await this.next(); f !== null; f = await this.next()) yield f;
    } finally {
      await this.close();
    }
  }

  /** Stops ffmpeg (idempotent). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const child = this.decoder.child;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited(child);
    }
    this.wake();
  }
}
