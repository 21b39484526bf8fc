/**
 * Progress of predict/track over a video on stderr: a bar with frames done / total, frames per second
 * and ETA on a terminal; a plain line at most every few seconds (and a last one) otherwise. A live
 * stream has no total: frames and frames per second only.
 */
import cliProgress from 'cli-progress';

const PLAIN_EVERY_MS = 5000;

function eta(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export class VideoProgress {
  private bar: cliProgress.SingleBar | null = null;
  private done = 0;
  private total = 0;
  private started = 0;
  private lastPlain = 0;
  private readonly tty: boolean;

  constructor(private readonly label: string, private readonly stream: NodeJS.WriteStream = process.stderr) {
    this.tty = Boolean(stream.isTTY);
  }

  /** `total` is the expected number of kept frames (0 when unknown). */
  start(total: number): void {
    this.total = total;
    this.started = performance.now();
    this.lastPlain = this.started;
    if (!this.tty) return;
    this.bar = new cliProgress.SingleBar({
      stream: this.stream, hideCursor: true, barsize: 24,
      format: total > 0 ? `${this.label} |{bar}| {value}/{total} frames | {fps} frames/s | ETA {etaText}` : `${this.label} {value} frames | {fps} frames/s`,
    }, cliProgress.Presets.shades_classic);
    this.bar.start(Math.max(total, 1), 0, { fps: '0.0', etaText: '?' });
  }

  private rate(): number {
    const s = (performance.now() - this.started) / 1000;
    return s > 0 ? this.done / s : 0;
  }

  private text(): string {
    const fps = this.rate();
    const total = this.total > 0 ? `/${this.total}` : '';
    const left = this.total > 0 ? `, ETA ${eta((this.total - this.done) / fps)}` : '';
    return `${this.label}: ${this.done}${total} frames, ${fps.toFixed(1)} frames/s${left}`;
  }

  tick(): void {
    this.done++;
    const fps = this.rate();
    if (this.bar) {
      if (this.done > this.total && this.total > 0) this.bar.setTotal(this.done);
      this.bar.update(this.done, { fps: fps.toFixed(1), etaText: this.total > 0 ? eta((this.total - this.done) / fps) : '' });
      return;
    }
    const now = performance.now();
    if (now - this.lastPlain >= PLAIN_EVERY_MS) {
      this.lastPlain = now;
      this.stream.write(`${this.text()}\n`);
    }
  }

  stop(): void {
    if (this.started === 0) return;
    if (this.bar) {
      this.bar.stop();
      this.bar = null;
    } else this.stream.write(`${this.text()}\n`);
  }
}
