/**
 * Debian's `ffmpeg` / `ffprobe` commands, run as child processes: video is decoded and encoded
 * outside Node, so there is no native addon to build. `LIBREYOLO_FFMPEG` names another ffmpeg binary
 * (its ffprobe is looked up beside it; `LIBREYOLO_FFPROBE` overrides that).
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { basename, dirname, join } from 'node:path';
import { LibreYOLOError } from '../errors.ts';

export function ffmpegPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.LIBREYOLO_FFMPEG || 'ffmpeg';
}

export function ffprobePath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LIBREYOLO_FFPROBE) return env.LIBREYOLO_FFPROBE;
  const ffmpeg = env.LIBREYOLO_FFMPEG;
  if (!ffmpeg || !ffmpeg.includes('/')) return 'ffprobe';
  return join(dirname(ffmpeg), basename(ffmpeg).replace(/ffmpeg/, 'ffprobe'));
}

export function ffmpegMissing(binary: string): LibreYOLOError {
  return new LibreYOLOError('ffmpeg_missing',
    `Video needs the '${binary}' command, which was not found. Install it (Debian/Ubuntu: sudo apt-get install ffmpeg; macOS: brew install ffmpeg), or set LIBREYOLO_FFMPEG to an ffmpeg binary.`);
}

/** Spawns `binary`; a missing binary rejects with `ffmpeg_missing` instead of an ENOENT. */
export function spawnTool(binary: string, args: string[], options: SpawnOptions = {}): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    child.once('spawn', () => resolve(child));
    child.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'ENOENT' || err.code === 'EACCES' ? ffmpegMissing(binary) : err));
  });
}

const DEMUXER_PREFIX = /^\[[^\]]* @ 0x[0-9a-f]+\] /;
const GENERIC_FAILURE = /^(Conversion failed!|Error marking filters as finished|Error while filtering: .*|Exiting normally, received signal .*)$/;

/** Keeps the first `head` and last `tail` bytes of a child's stderr: enough to parse and to quote. */
export class StderrLog {
  private headText = '';
  private tailText = '';
  constructor(private readonly head = 64 * 1024, private readonly tail = 8 * 1024) {}
  push(chunk: Buffer | string): void {
    const s = chunk.toString();
    if (this.headText.length < this.head) this.headText += s.slice(0, this.head - this.headText.length);
    this.tailText = (this.tailText + s).slice(-this.tail);
  }
  get start(): string { return this.headText; }
  /**
   * The last meaningful line ffmpeg printed (its reason for failing), without progress lines, the
   * generic closing lines of a failed conversion, or the `[demuxer @ 0x...]` prefix. A stream that
   * ended before its first frame reads as having no frames, a missing decoder as what it is.
   */
  reason(input?: string): string {
    const lines = this.tailText.split(/[\r\n]+/).map((l) => l.trim())
      .filter((l) => l && !/^(frame=|video:|size=)/.test(l) && !GENERIC_FAILURE.test(l))
      .map((l) => ({ text: l.replace(DEMUXER_PREFIX, ''), fromDemuxer: DEMUXER_PREFIX.test(l) }));
    let last = lines.at(-1)?.text ?? '';
    // `<input>: Invalid data found when processing input` says little; the demuxer's line before it says why.
    if (input && last.startsWith(`${input}: `)) {
      last = last.slice(input.length + 2);
      const before = lines.at(-2);
      if (before?.fromDemuxer) last = `${before.text}: ${last}`;
    }
    if (/^Cannot determine format of input stream .* after EOF$/.test(last)) return 'it holds no video frames';
    const decoder = /^Decoder \(codec (.+)\) not found for input stream/.exec(last);
    if (decoder) return `this ffmpeg has no decoder for its video codec (${decoder[1]})`;
    return last;
  }

  /** Lines of the kept tail that a demuxer or decoder printed (`[mpeg4 @ 0x...] ...`): damage it met. */
  complaints(): string[] {
    return this.tailText.split(/[\r\n]+/).map((l) => l.trim()).filter((l) => DEMUXER_PREFIX.test(l)).map((l) => l.replace(DEMUXER_PREFIX, ''));
  }
}

/** Resolves with the exit code (or the signal's name) once the child has exited. */
export function exited(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => child.once('close', (code, signal) => resolve(code ?? signal ?? -1)));
}

export interface ProbeResult {
  width: number;
  height: number;
  /** Frame rate as ffprobe states it (`30000/1001`), or null when unknown. */
  rate: string | null;
  /** Frame count from the container, or an estimate from the duration; 0 when unknown. */
  frames: number;
}

function rateValue(rate: string | undefined): number {
  if (!rate) return 0;
  const [n, d] = rate.split('/').map(Number);
  return d ? n! / d : Number(n) || 0;
}

/** The first video stream's size, rate and frame count; `null` when ffprobe cannot read the file (with its reason). */
export async function probeVideo(path: string): Promise<ProbeResult | { error: string }> {
  const child = await spawnTool(ffprobePath(), [
    '-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=codec_name,codec_tag_string,width,height,avg_frame_rate,r_frame_rate,nb_frames,duration:format=duration',
    '-of', 'json', path,
  ]);
  let out = '';
  const err = new StderrLog();
  child.stdout!.on('data', (c: Buffer) => { if (out.length < 1 << 20) out += c.toString(); });
  child.stderr!.on('data', (c: Buffer) => err.push(c));
  const code = await exited(child);
  if (code !== 0) return { error: err.reason(path) || `ffprobe exited with ${code}` };
  let parsed: { streams?: Array<Record<string, string | number>>; format?: { duration?: string } };
  try { parsed = JSON.parse(out) as typeof parsed; } catch { return { error: 'ffprobe printed no stream information' }; }
  const s = parsed.streams?.[0];
  if (!s) return { error: 'it holds no video stream' };
  if (!s.codec_name) return { error: `its video codec (FourCC ${String(s.codec_tag_string ?? '?')}) is not one this ffmpeg knows` };
  const avg = rateValue(String(s.avg_frame_rate ?? ''));
  const rate = avg > 0 ? String(s.avg_frame_rate) : rateValue(String(s.r_frame_rate ?? '')) > 0 ? String(s.r_frame_rate) : null;
  const nb = Number(s.nb_frames);
  const duration = Number(s.duration ?? parsed.format?.duration);
  const frames = Number.isFinite(nb) && nb > 0 ? nb : rate && Number.isFinite(duration) ? Math.round(duration * rateValue(rate)) : 0;
  return { width: Number(s.width) || 0, height: Number(s.height) || 0, rate, frames };
}

export { rateValue };
