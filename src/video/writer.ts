/**
 * Annotated video out, as the original writes it: MPEG-4 Part 2 video with FourCC `mp4v`, yuv420p, at
 * the source size (an odd side loses its last pixel row or column, as with OpenCV), the container
 * chosen by the file's extension. ffmpeg encodes into a hidden partial file that only gets its final
 * name once ffmpeg has finished and exited cleanly, so a killed run never leaves a file that looks
 * complete; an existing file is never replaced (`clip2.mp4` instead).
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, rm } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { LibreYOLOError } from '../errors.ts';
import { publishUnique } from '../util/fs.ts';
import { exited, ffmpegPath, spawnTool, StderrLog } from './ffmpeg.ts';

const CONTAINERS: Record<string, string> = { '.mp4': 'mp4', '.m4v': 'mp4', '.mov': 'mov', '.avi': 'avi', '.mkv': 'matroska' };

export const VIDEO_OUTPUT_SUFFIXES = Object.keys(CONTAINERS);

/** `rate` divided by `stride`, as an exact fraction ffmpeg reads (`25/1` by 2 -> `25/2`). */
export function strideRate(rate: string, stride: number): string {
  let [num, den] = rate.includes('/') ? rate.split('/') as [string, string] : [rate, '1'];
  const decimals = /\.(\d+)$/.exec(num)?.[1]?.length ?? 0;
  if (decimals > 0) {
    den = String(Number(den) * 10 ** decimals);
    num = num.replace('.', '').replace(/^0+(?=\d)/, '');
  }
  return `${num}/${Number(den) * stride}`;
}

export interface VideoTarget {
  /** Folder the video lands in. */
  dir: string;
  /** File name without extension. */
  stem: string;
  /** Extension with its dot (`.mp4`). */
  ext: string;
}

export class VideoWriter {
  private failed: Error | null = null;
  private done = false;
  private readonly exit: Promise<number | string>;

  private constructor(
    private readonly child: ChildProcess,
    private readonly partial: string,
    private readonly target: VideoTarget,
    private readonly stderr: StderrLog,
    readonly width: number,
    readonly height: number,
  ) {
    child.stdin!.on('error', (e: Error) => { this.failed ??= e; });
    this.exit = exited(child);
  }

  /** Starts ffmpeg writing RGB frames of `width` x `height` at `rate` frames per second. */
  static async open(target: VideoTarget, width: number, height: number, rate: string): Promise<VideoWriter> {
    const format = CONTAINERS[target.ext.toLowerCase()];
    const shown = join(target.dir, `${target.stem}${target.ext}`);
    if (format === undefined) {
      throw new LibreYOLOError('config_range_error',
        `Cannot open video writer for: ${shown} (annotated video is written as ${VIDEO_OUTPUT_SUFFIXES.join(', ')}). Give output_path one of these suffixes, or a folder.`);
    }
    await mkdir(target.dir, { recursive: true });
    const partial = join(target.dir, `.${target.stem}.partial-${process.pid}-${randomBytes(4).toString('hex')}`);
    const child = await spawnTool(ffmpegPath(), [
      '-hide_banner', '-nostdin', '-loglevel', 'error', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${width}x${height}`, '-r', rate,
      '-i', 'pipe:0', '-c:v', 'mpeg4', '-tag:v', 'mp4v', '-pix_fmt', 'yuv420p', '-f', format, '-y', partial,
    ], { stdio: ['pipe', 'ignore', 'pipe'] });
    const stderr = new StderrLog();
    child.stderr!.on('data', (c: Buffer) => stderr.push(c));
    return new VideoWriter(child, partial, target, stderr, width, height);
  }

  /** Appends one packed RGB frame (waits while ffmpeg catches up). */
  async write(rgb: Uint8Array): Promise<void> {
    if (rgb.length !== this.width * this.height * 3) throw new RangeError(`VideoWriter: a frame of ${rgb.length} bytes, expected ${this.width}x${this.height}x3`);
    if (this.failed) throw this.writeError(this.failed.message);
    if (!this.child.stdin!.write(rgb)) {
      await Promise.race([once(this.child.stdin!, 'drain'), this.exit]);
    }
    const failed = this.failed as Error | null; // set by the stdin 'error' listener meanwhile
    if (failed || this.child.exitCode !== null) throw this.writeError(failed?.message ?? 'ffmpeg stopped');
  }

  private writeError(detail: string): LibreYOLOError {
    return new LibreYOLOError('io_error', `Cannot write video ${join(this.target.dir, this.target.stem + this.target.ext)}: ${this.stderr.reason() || detail}`);
  }

  /** Finishes the file and gives it its final name; returns that path. */
  async finish(): Promise<string> {
    if (this.done) throw new Error('VideoWriter: already finished');
    this.done = true;
    this.child.stdin!.end();
    const code = await this.exit;
    try {
      if (code !== 0) throw this.writeError(`ffmpeg exited with ${code}`);
      return await publishUnique(this.partial, this.target.dir, this.target.stem, this.target.ext.slice(1));
    } finally {
      await rm(this.partial, { force: true });
    }
  }

  /** Stops ffmpeg and removes the partial file (after an error). */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    this.child.kill('SIGKILL');
    await this.exit;
    await rm(this.partial, { force: true });
  }
}

/** Where a saved video goes when `output_path` names a file (kept verbatim) or a folder (`<stem>.mp4` inside). */
export function videoTarget(outputPath: string, isFolder: boolean, stem: string): VideoTarget {
  if (isFolder || extname(outputPath) === '') return { dir: outputPath, stem, ext: '.mp4' };
  const ext = extname(outputPath);
  return { dir: dirname(outputPath), stem: basename(outputPath, ext), ext };
}
