/**
 * The training profiler: a `TrainStepProfiler` that the trainer drives through
 * its port (`train/profiler-port.ts`: `wrapLoader` / `phase` / `step`); `app/profile-run.ts` is the
 * `libreyolo profile run` command around it.
 *
 * Window: `warmup` iterations are discarded, then `steps` (at least 2) are measured, counted across
 * epochs for model.train(profile=True) (host spans only inside iterations, so validation between
 * epochs stays out), within one epoch for `profile run` (`singleEpoch`). The first half of the
 * measured steps gives the real step time (data wait included), the second half the per-phase
 * composition. The train step's ORT session is created with profiling on; at the window's close its
 * events are streamed from ORT's file onto the host clock and merged with the host record (step
 * markers, phase spans, memory) into `profile_trace.json` (train-timeline.ts), which the shared
 * analysis streams back into `profile.json` (with `profile_summary.json` beside it).
 *
 * Phases: `dataload` (waiting for the loader), `to_device` (handing the batch and the parameters to
 * the session's worker and into ORT tensors, up to the run's first node), `forward` and `backward`
 * (one ORT run, cut into stretches of forward nodes and of the gradient nodes, which the autodiff
 * pass names `/backward/...`), `optimizer` (the host update).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Device } from '../runtime/device.ts';
import { findOrtFile } from '../runtime/ort-profile-file.ts';
import { setSpanRecorder, type HostSpan, type SpanRecorder } from '../runtime/spans.ts';
import type { TrainPhase, TrainProfiler, TrainProfilerFactory } from '../train/profiler-port.ts';
import type { StepRunner } from '../train/runner.ts';
import { writeFileAtomic } from '../util/fs.ts';
import { writeChromeTrace, type StepRecord } from './chrome-trace.ts';
import { pyFixed, pyJson, pyRound } from './pyfmt.ts';
import { PROFILE_FILE, SUMMARY_FILE, TRACE_FILE, type ProfileAnalysis, type ProfileSummary } from './schema.ts';
import { NodeTimes, readSessionTimeline, traceCap, type SessionTimeline } from './train-timeline.ts';
import { refineTrainVerdict } from './verdict.ts';
import { finalizeProfile } from './write.ts';

const nowUs = (): number => (performance.timeOrigin + performance.now()) * 1000;
const ORT_PID = 10;
/** The step's own record of its ORT run on the worker (runtime clock alignment uses it). */
const WORKER_RUN = 'train step (worker)';

export interface TrainProfilerOptions {
  warmup: number;
  steps: number;
  saveDir: string;
  device: Device;
  meta: Record<string, unknown>;
  /** Record the ORT trace (profile.json needs it). Default true. */
  trace?: boolean;
  /**
   * The window must fit in one epoch (`profile run`): an epoch that ends before the window closes
   * throws WindowNotFilled instead of carrying the window over the epoch boundary.
   */
  singleEpoch?: boolean;
  log?: (line: string) => void;
  /** Log a line per iteration of the window (`profile run`, where the trainer's own progress is off). */
  progress?: boolean;
}

/** The epoch ended before warmup + steps iterations (singleEpoch). */
export class WindowNotFilled extends Error {
  constructor(readonly iterations: number) {
    super(`the epoch ended after ${iterations} iterations, before the profile window filled`);
  }
}

interface Iteration {
  index: number;
  start: number;
  end: number;
  synced: boolean;
}

/** Trainer hooks + host recorder for one profile window. */
export class TrainStepProfiler implements TrainProfiler, SpanRecorder {
  finished = false;
  readonly ortProfilePrefix: string | undefined;
  private readonly warmup: number;
  private readonly active: number;
  private readonly half: number;
  private runner: StepRunner | null = null;
  private stepI = 0;
  private m = 0;
  private dlMs = 0;
  private dlN = 0;
  private realMs = 0;
  private realN = 0;
  private stepT0: number | null = null;
  private iterT0 = 0;
  private iterStartUs = 0;
  private syncedN = 0;
  private readonly sums: Record<TrainPhase, number> = { to_device: 0, forward: 0, backward: 0, optimizer: 0 };
  private readonly spans: HostSpan[] = [];
  private readonly iterations: Iteration[] = [];
  private readonly rss: Array<{ ts: number; mb: number }> = [];
  private readonly notes: string[] = [];
  private measureFrom = Infinity;
  private recording = false;
  /**
   * Between an iteration's next(batch) and its step(): host spans are kept only then, so what the
   * trainer does between iterations (validation, checkpoints at an epoch's end) stays out.
   */
  private inIteration = false;
  private cleaned = false;
  /** Set when the window closed and the files were written. */
  profile: ProfileAnalysis | null = null;

  private constructor(private readonly o: TrainProfilerOptions, private readonly ortDir: string | null) {
    this.warmup = Math.max(0, o.warmup);
    this.active = Math.max(2, o.steps);
    this.half = Math.max(1, Math.floor(this.active / 2));
    this.ortProfilePrefix = ortDir ? join(ortDir, 'train') : undefined;
  }

  static async create(o: TrainProfilerOptions): Promise<TrainStepProfiler> {
    const dir = o.trace === false ? null : await mkdtemp(join(tmpdir(), 'libreyolo-train-profile-'));
    return new TrainStepProfiler(o, dir);
  }

  attach(runner: StepRunner): void {
    this.runner = runner;
  }

  private get activeNow(): boolean {
    return !this.finished && this.stepI >= this.warmup;
  }

  private get unsynced(): boolean {
    return this.activeNow && this.m < this.half;
  }

  private get synced(): boolean {
    return this.activeNow && this.m >= this.half;
  }

  record(span: HostSpan): void {
    if (this.recording && this.inIteration) this.spans.push(span);
  }

  private beginMeasurement(): void {
    if (this.recording || this.finished) return;
    this.recording = true;
    this.measureFrom = nowUs();
    setSpanRecorder(this);
  }

  private stopRecording(): void {
    if (!this.recording) return;
    this.recording = false;
    setSpanRecorder(null);
  }

  async *wrapLoader<T>(batches: AsyncIterable<T>): AsyncIterable<T> {
    const it = batches[Symbol.asyncIterator]();
    for (;;) {
      if (this.activeNow) this.beginMeasurement();
      const measuring = this.activeNow;
      this.inIteration = measuring;
      const t0 = performance.now();
      const t0us = nowUs();
      this.iterT0 = t0;
      const next = await it.next();
      if (next.done) {
        this.inIteration = false;
        if (this.o.singleEpoch && !this.finished) throw new WindowNotFilled(this.stepI);
        return;
      }
      const t1 = performance.now();
      if (measuring) {
        this.iterStartUs = t0us;
        this.spans.push({ name: 'dataload', cat: 'dataload', ts: t0us, dur: (t1 - t0) * 1000, tid: 0 });
      }
      if (this.unsynced) {
        this.dlMs += t1 - t0;
        this.dlN++;
        this.stepT0 = t0;
      } else this.stepT0 = null;
      yield next.value;
    }
  }

  async phase<T>(name: TrainPhase, fn: () => Promise<T>): Promise<T> {
    if (!this.activeNow) return fn();
    const t0 = performance.now();
    const ts = nowUs();
    try {
      return await fn();
    } finally {
      const ms = performance.now() - t0;
      // The runner brackets the whole step call as `forward`; finish() splits it into
      // to_device / forward / backward from the worker's run interval and the ORT events.
      this.spans.push({ name: name === 'forward' ? 'train step (call)' : name, cat: name === 'forward' ? 'step call' : name, ts, dur: ms * 1000, tid: 0 });
      if (this.synced && name !== 'forward') this.sums[name] += ms;
    }
  }

  async step(): Promise<void> {
    if (this.finished) return;
    const done = performance.now();
    if (this.unsynced && this.stepT0 !== null) {
      this.realMs += done - this.stepT0;
      this.realN++;
      this.stepT0 = null;
    }
    if (this.o.progress) {
      const total = this.warmup + this.active;
      const what = this.stepI < this.warmup ? 'warmup' : this.m < this.half ? 'timed' : 'phase-synced';
      this.o.log?.(`  profile iteration ${this.stepI + 1}/${total} (${what}) ${pyFixed(done - this.iterT0, 0)} ms`);
    }
    if (this.stepI >= this.warmup) {
      const end = nowUs();
      this.iterations.push({ index: this.m, start: this.iterStartUs || end, end, synced: this.m >= this.half });
      this.rss.push({ ts: end, mb: process.memoryUsage.rss() / 1e6 });
    }
    this.inIteration = false;
    if (this.synced) this.syncedN++;
    if (this.stepI >= this.warmup) this.m++;
    this.stepI++;
    if (this.m >= this.active) await this.finish();
  }

  /**
   * Splits each step call into phases: to_device (call start -> worker run start), then forward and
   * backward segments over the ORT run (a segment per stretch of consecutive forward or `/backward/`
   * nodes, so every kernel lies in its own phase even where ORT interleaves the two), and the tail
   * after the run (the gradients' trip back) as backward.
   */
  private splitCalls(nodes: NodeTimes): HostSpan[] {
    const runs = this.spans.filter((s) => s.name === WORKER_RUN);
    const firstIndexAtOrAfter = (t: number): number => {
      let lo = 0, hi = nodes.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (nodes.ts[mid]! < t) lo = mid + 1; else hi = mid;
      }
      return lo;
    };
    const out: HostSpan[] = [];
    for (const s of this.spans) {
      if (s.name === WORKER_RUN) {
        out.push({ ...s, cat: 'worker run' });
        continue;
      }
      if (s.cat !== 'step call') {
        out.push(s);
        continue;
      }
      out.push(s);
      const c0 = s.ts, c1 = s.ts + s.dur;
      const run = runs.find((r) => r.ts >= c0 - 1 && r.ts + r.dur <= c1 + 1);
      const w0 = run ? Math.max(run.ts, c0) : c0;
      const w1 = run ? Math.min(run.ts + run.dur, c1) : c1;
      // Until ORT's first node runs, the call is handing the batch and the parameters over.
      const first = firstIndexAtOrAfter(w0);
      const firstTs = first < nodes.length && nodes.ts[first]! < w1 ? nodes.ts[first]! : w0;
      const parts: Record<'to_device' | 'forward' | 'backward', number> = { to_device: firstTs - c0, forward: 0, backward: 0 };
      if (firstTs > c0) out.push({ name: 'to_device', cat: 'to_device', ts: c0, dur: firstTs - c0, tid: s.tid });
      let segStart = firstTs;
      let segBackward = false;
      const close = (end: number): void => {
        if (end <= segStart) return;
        const phase = segBackward ? 'backward' : 'forward';
        out.push({ name: phase, cat: phase, ts: segStart, dur: end - segStart, tid: s.tid });
        parts[phase] += end - segStart;
      };
      for (let k = first; k < nodes.length && nodes.ts[k]! < w1; k++) {
        const backward = nodes.backward[k] === 1;
        if (backward === segBackward) continue;
        close(nodes.ts[k]!);
        segStart = nodes.ts[k]!;
        segBackward = backward;
      }
      close(w1);
      if (c1 > w1) {
        out.push({ name: 'backward', cat: 'backward', ts: w1, dur: c1 - w1, tid: s.tid });
        parts.backward += c1 - w1;
      }
      if (this.iterations.some((it) => it.synced && it.start <= c0 && c0 <= it.end)) {
        this.sums.to_device += parts.to_device / 1000;
        this.sums.forward += parts.forward / 1000;
        this.sums.backward += parts.backward / 1000;
      }
    }
    return out;
  }

  private async finish(): Promise<void> {
    this.finished = true;
    this.stopRecording();
    const o = this.o;
    const batch = Number(o.meta.batch) || 0;
    // The ORT files are read as streams: once for the run times and the node timeline (typed
    // arrays, ~9 bytes a node), once more to copy the events into the trace file.
    let sessions: SessionTimeline[] = [];
    let spans: HostSpan[] = this.spans;
    if (this.ortDir && this.runner) {
      const workerRuns = this.spans.filter((s) => s.name === WORKER_RUN);
      for (const step of this.runner.steps.values()) {
        await step.endProfiling();
        const s = step.sessionInfo;
        if (!s.profilePrefix) continue;
        const file = await findOrtFile(s.profilePrefix);
        if (file) sessions.push(await readSessionTimeline(file, s.key, s.info.profileStartEpochMs ?? 0, ORT_PID + sessions.length, workerRuns, this.measureFrom));
      }
      const all = NodeTimes.merge(sessions.map((t) => t.nodes));
      spans = this.splitCalls(all);
    }
    const steps = this.iterations.map((it): StepRecord => ({ index: it.index, ts: it.start, dur: it.end - it.start }));
    const cap = traceCap(sessions, steps);
    if (cap.note) this.notes.push(cap.note);
    const traced = Boolean(this.ortDir && this.runner);
    const writeTrace = async (path: string): Promise<void> => {
      try {
        await writeChromeTrace(path, { spans, steps, rss: this.rss, sessions: sessions.map((t) => t.stream(cap.keep)) });
      } finally {
        await this.cleanup();
      }
    };
    const stepMs = this.realN ? this.realMs / this.realN : 0;
    const dl = this.dlN ? this.dlMs / this.dlN : 0;
    const div = Math.max(this.syncedN, 1);
    const composition = Object.fromEntries((['to_device', 'forward', 'backward', 'optimizer'] as const).map((p) => [p, pyRound(this.sums[p] / div, 3)]));
    const compTotal = Object.values(composition).reduce((a, b) => a + b, 0);
    const frac = stepMs > 0 ? dl / stepMs : 0;
    const summary: ProfileSummary = {
      meta: { ...o.meta, mode: 'train' },
      window: { warmup: this.warmup, real_steps: this.realN, synced_steps: this.syncedN },
      real: {
        step_ms: pyRound(stepMs, 3), dataload_ms: pyRound(dl, 3), compute_ms: pyRound(Math.max(stepMs - dl, 0), 3),
        img_per_s: stepMs > 0 ? pyRound(batch / (stepMs / 1000), 2) : 0, dataload_frac: pyRound(frac, 3),
      },
      composition_ms: composition,
      composition_total_ms: pyRound(compTotal || 1.0, 3),
      bound: frac >= 0.2 ? 'dataloader' : 'compute',
      bound_why: '',
      trace: traced ? join(o.saveDir, TRACE_FILE) : null,
      ...(this.notes.length ? { notes: this.notes } : {}),
    };
    if (!traced) {
      await this.cleanup();
      // As the original: without a trace only profile_summary.json is written, no profile.json.
      await writeFileAtomic(join(o.saveDir, SUMMARY_FILE), `${pyJson(summary, 2)}\n`);
      return;
    }
    const cpu = o.device.kind === 'cpu';
    this.profile = await finalizeProfile({
      saveDir: o.saveDir, writeTrace, summary,
      fallback: () => { throw new Error('unreachable: a trace is present'); },
      verdict: (a) => refineTrainVerdict(a, summary, cpu),
    });
    this.report(this.profile);
  }

  private report(a: ProfileAnalysis): void {
    const log = this.o.log;
    if (!log) return;
    const m = this.o.meta;
    const real = { step: a.step_ms, dl: a.dataload_ms ?? 0 };
    const phases = a.phases.map((p) => `${p.phase} ${pyFixed(p.wall_ms_per_step ?? 0, 1)}ms`).join(' | ');
    log([
      '='.repeat(64),
      `  LibreYOLO training profile - ${String(m.model)}`,
      `  device=${String(m.device)}  batch=${String(m.batch)}  imgsz=${String(m.imgsz)}  amp=${m.amp ? 'true' : 'false'}  workers=${String(m.workers)}`,
      `  REAL step ${pyFixed(real.step, 1)} ms = dataload ${pyFixed(real.dl, 1)} ms + compute ${pyFixed(Math.max(real.step - real.dl, 0), 1)} ms  ->  ${pyFixed(a.img_per_s ?? 0, 1)} img/s`,
      `  ${kernelLine(a, this.o.device)}`,
      `  >> VERDICT: ${a.bound.toUpperCase()}: ${a.bound_why}.`,
      `  per-phase wall: ${phases}`,
      `  profile:   ${join(this.o.saveDir, PROFILE_FILE)}`,
      `  raw trace: ${join(this.o.saveDir, TRACE_FILE)}  (load in Perfetto if you want)`,
      '='.repeat(64),
    ].join('\n'));
  }

  private async cleanup(): Promise<void> {
    this.stopRecording();
    if (this.cleaned) return;
    this.cleaned = true;
    if (this.ortDir) await rm(this.ortDir, { recursive: true, force: true });
  }

  /**
   * Removes ORT's temp folder again: the trainer closes its step sessions after the profiler, and
   * ORT can leave an (empty) profile file behind as a session goes; `profile run` calls this last.
   */
  async removeTempFiles(): Promise<void> {
    if (this.ortDir) await rm(this.ortDir, { recursive: true, force: true });
  }

  /** An unfinished window leaves no files: stop recording and remove ORT's temp files. */
  async close(): Promise<void> {
    await this.cleanup();
  }
}

function kernelLine(a: ProfileAnalysis, device: Device): string {
  const what = device.kind === 'cpu' ? 'ORT kernels' : 'device';
  return `${what} busy ${pyFixed(a.gpu_util * 100, 0)}% (${pyFixed(a.gpu_busy_ms_per_step, 0)} ms / ${pyFixed(a.step_ms, 0)} ms step)  |  ${a.kernels_per_step} kernels/step @ ~${pyFixed(a.mean_kernel_us, 0)}us`;
}

/**
 * The trainer's profiler factory (`TrainRuntime.profiler`): the trainer's context (`profile_trace`
 * included), `singleEpoch` and `log` (a line per iteration) for `profile run`.
 */
export function trainProfilerFactory(options: { singleEpoch?: boolean; log?: (line: string) => void } = {}): TrainProfilerFactory {
  return (ctx) => TrainStepProfiler.create({
    ...ctx, ...(options.singleEpoch ? { singleEpoch: true } : {}),
    ...(options.log ? { log: options.log, progress: true } : {}),
  });
}
