/**
 * The recorder behind every profile: it turns ORT profiling on for the engines' sessions (each with
 * a unique file prefix in a private temp dir), collects the package's host spans, step markers and
 * memory samples while measuring, then merges it all into one Chrome trace and removes ORT's files.
 * It knows nothing about inference or training: a loop calls beginMeasurement(), wraps each step in
 * step(), marks phases with host spans (`span(name, phase, fn)`), and calls finish(path), which
 * streams ORT's events from its files into the trace file (never holding them).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { SessionEngine } from '../runtime/engine.ts';
import { setSpanRecorder, type HostSpan, type SpanRecorder } from '../runtime/spans.ts';
import { writeChromeTrace, type StepRecord } from './chrome-trace.ts';
import { eachOrtEvent, ortClockOffset, readOrtSessions, slimOrtEvent } from './ort-trace.ts';
import type { TraceEvent } from './schema.ts';

const nowUs = (): number => (performance.timeOrigin + performance.now()) * 1000;
/** ORT's files go to `<tmpdir>/libreyolo-profile-<pid>-XXXXXX/`, removed when the recorder finishes. */
export const ORT_DIR_PREFIX = 'libreyolo-profile-';
/** First pid of the ORT session processes in the merged trace (the host is pid 1). */
const ORT_PID = 10;

export class ProfileRecorder implements SpanRecorder {
  private readonly spans: HostSpan[] = [];
  private readonly steps: StepRecord[] = [];
  private readonly rss: Array<{ ts: number; mb: number }> = [];
  private measureFrom = Infinity;
  private done = false;
  /** Set by finish(): whether ORT reported device kernel events (not only node times). */
  sawDeviceKernels = false;

  private constructor(private readonly engines: readonly SessionEngine[], private readonly ortDir: string) {}

  /** Turns ORT profiling on; the engines' sessions are recreated (profiled) on their next run. */
  static async start(engines: readonly SessionEngine[]): Promise<ProfileRecorder> {
    const dir = await mkdtemp(join(tmpdir(), `${ORT_DIR_PREFIX}${process.pid}-`));
    const rec = new ProfileRecorder(engines, dir);
    try {
      for (const [k, e] of engines.entries()) await e.setProfiling(join(dir, `e${k}`));
    } catch (err) {
      await rec.abort();
      throw err;
    }
    return rec;
  }

  /** Starts keeping host spans, steps and memory; everything before (warmup) stays out of the trace. */
  beginMeasurement(): void {
    this.measureFrom = nowUs();
    setSpanRecorder(this);
  }

  record(span: HostSpan): void {
    this.spans.push(span);
  }

  /** Runs one step under a `ProfilerStep#<index>` marker and samples the resident set after it. */
  async step<T>(index: number, fn: () => Promise<T>): Promise<T> {
    const t0 = nowUs();
    try {
      return await fn();
    } finally {
      const t1 = nowUs();
      this.steps.push({ index, ts: t0, dur: t1 - t0 });
      this.rss.push({ ts: t1, mb: process.memoryUsage.rss() / 1e6 });
    }
  }

  /** Flushes ORT's profiles, writes them merged with the host record to `path`, and cleans up. */
  async finish(path: string): Promise<void> {
    this.stopSpans();
    try {
      const profiled = [];
      for (const e of this.engines) {
        for (const s of await e.profiledSessions()) profiled.push(s);
        await e.endProfiling();
      }
      const files = await readOrtSessions(profiled);
      const workerRuns = this.spans.filter((s) => s.name.endsWith('(worker)'));
      const sessions = files.map((f, k) => {
        const pid = ORT_PID + k;
        const offset = ortClockOffset(f, workerRuns);
        return {
          key: f.key, pid,
          each: (emit: (e: TraceEvent) => void | Promise<void>) => eachOrtEvent(f.file, (e) => {
            const slim = slimOrtEvent(e, offset, pid);
            if (!slim || slim.ts! < this.measureFrom) return undefined;
            if (slim.cat === 'Kernel') this.sawDeviceKernels = true;
            return emit(slim);
          }),
        };
      });
      await writeChromeTrace(path, { spans: this.spans.filter((s) => s.ts >= this.measureFrom), steps: this.steps, rss: this.rss, sessions });
    } finally {
      await this.abort();
    }
  }

  /** Turns profiling off (releasing the profiled sessions) and removes ORT's files; safe to repeat. */
  async abort(): Promise<void> {
    this.stopSpans();
    if (this.done) return;
    this.done = true;
    try {
      for (const e of this.engines) await e.setProfiling(undefined);
    } finally {
      await rm(this.ortDir, { recursive: true, force: true });
    }
  }

  private stopSpans(): void {
    if (Number.isFinite(this.measureFrom)) setSpanRecorder(null);
  }
}
