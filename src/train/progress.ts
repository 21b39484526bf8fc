/**
 * Per-epoch training progress on stderr: a cli-progress bar on a terminal (loss components, img/s,
 * ETA), periodic plain lines when stderr is not a TTY (logs, CI), nothing when quiet.
 */
import cliProgress from 'cli-progress';

export interface ProgressStats {
  loss: number;
  /** The family's loss components by name, in display order. */
  components: Record<string, number>;
  imgPerS: number;
  lr: number;
}

export interface ProgressOptions {
  enabled: boolean;
  /** Print a line every this many iterations when not on a TTY. */
  logInterval: number;
  stream?: NodeJS.WriteStream;
}

function formatEta(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}` : `${m}:${String(sec).padStart(2, '0')}`;
}

const fmt = (x: number): string => (Number.isFinite(x) ? x.toFixed(4) : 'nan');
const componentsText = (c: Record<string, number>): string => Object.entries(c).map(([k, v]) => `${k} ${fmt(v)}`).join(' ');

export class EpochProgress {
  private bar: cliProgress.SingleBar | null = null;
  private total = 0;
  private started = 0;
  private label = '';
  private readonly stream: NodeJS.WriteStream;
  private readonly tty: boolean;

  constructor(private readonly options: ProgressOptions) {
    this.stream = options.stream ?? process.stderr;
    this.tty = Boolean(this.stream.isTTY);
  }

  line(text: string): void {
    if (this.options.enabled) this.stream.write(`${text}\n`);
  }

  start(epoch: number, epochs: number, total: number): void {
    this.total = total;
    this.started = performance.now();
    this.label = `Epoch ${epoch + 1}/${epochs}`;
    if (!this.options.enabled || !this.tty) return;
    this.bar = new cliProgress.SingleBar({
      stream: this.stream,
      format: `${this.label} |{bar}| {value}/{total} | loss {loss} {components} | {ips} img/s | lr {lr} | ETA {etaText}`,
      barsize: 20,
      hideCursor: true,
      clearOnComplete: false,
      fps: 5,
    }, cliProgress.Presets.shades_classic);
    this.bar.start(total, 0, { loss: '-', components: '', ips: '-', lr: '-', etaText: '?' });
  }

  update(done: number, s: ProgressStats): void {
    if (!this.options.enabled) return;
    const elapsed = (performance.now() - this.started) / 1000;
    const eta = done > 0 ? (elapsed / done) * (this.total - done) : NaN;
    if (this.bar) {
      this.bar.update(done, { loss: fmt(s.loss), components: componentsText(s.components), ips: s.imgPerS.toFixed(1), lr: s.lr.toExponential(2), etaText: formatEta(eta) });
      return;
    }
    const every = Math.max(1, this.options.logInterval);
    if (done % every === 0 || done === this.total) {
      this.line(`${this.label} ${done}/${this.total} loss ${fmt(s.loss)} ${componentsText(s.components)} ${s.imgPerS.toFixed(1)} img/s lr ${s.lr.toExponential(2)} ETA ${formatEta(eta)}`);
    }
  }

  stop(): void {
    this.bar?.stop();
    this.bar = null;
  }
}
