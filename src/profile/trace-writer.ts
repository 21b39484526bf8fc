/**
 * A Chrome trace written as a stream: events are serialised one by one into a buffer that goes to
 * disk in ~1 MB pieces, so a trace of millions of events is never one string or one array. The file
 * is written under a temp name beside the target and renamed when complete (never half a trace).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { TraceEvent } from './schema.ts';

const FLUSH_CHARS = 1 << 20;

/** JSON has no NaN or Infinity: a non-finite number is written as null (see schema.ts). */
const finite = (_k: string, v: unknown): unknown => (typeof v === 'number' && !Number.isFinite(v) ? null : v);

export class TraceWriter {
  private parts: string[] = [];
  private size = 0;
  private first = true;
  count = 0;

  private constructor(private readonly fh: FileHandle, private readonly tmp: string, readonly path: string) {}

  static async open(path: string): Promise<TraceWriter> {
    const dir = dirname(path);
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `.${basename(path)}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
    const fh = await open(tmp, 'w');
    const w = new TraceWriter(fh, tmp, path);
    w.parts.push('{"traceEvents": [\n');
    return w;
  }

  /** Adds one event; returns a promise only when the buffer went to disk (await it then). */
  write(e: TraceEvent): Promise<void> | void {
    const s = JSON.stringify(e, finite);
    this.parts.push(this.first ? s : `,\n${s}`);
    this.first = false;
    this.count++;
    this.size += s.length + 2;
    if (this.size >= FLUSH_CHARS) return this.flush();
  }

  private async flush(): Promise<void> {
    const text = this.parts.join('');
    this.parts = [];
    this.size = 0;
    await this.fh.write(text);
  }

  /** Ends the document and renames it into place. */
  async close(extra: Record<string, unknown> = { displayTimeUnit: 'ms' }): Promise<void> {
    const tail = Object.entries(extra).map(([k, v]) => `, ${JSON.stringify(k)}: ${JSON.stringify(v)}`).join('');
    this.parts.push(`\n]${tail}}\n`);
    try {
      await this.flush();
      await this.fh.close();
      await rename(this.tmp, this.path);
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  /** Drops the partial file. */
  async abort(): Promise<void> {
    await this.fh.close().catch(() => undefined);
    await rm(this.tmp, { force: true });
  }
}
