/**
 * What every inference profile records on the host while it measures, whatever the runtime: the
 * package's host spans, the `ProfilerStep` markers and memory samples, and the ORT events kept for
 * the trace (put on the host clock, inside the measured stretch). The Node recorder (recorder.ts)
 * adds ORT's files; the browser's (browser/profile.ts) the events onnxruntime-web hands back.
 */
import { setSpanRecorder, type HostSpan, type SpanRecorder } from '../runtime/spans.ts';
import type { StepRecord } from './host-trace.ts';
import { slimOrtEvent } from './ort-events.ts';
import type { TraceEvent } from './schema.ts';

const nowUs = (): number => (performance.timeOrigin + performance.now()) * 1000;

export class HostRecord implements SpanRecorder {
  private readonly allSpans: HostSpan[] = [];
  readonly steps: StepRecord[] = [];
  readonly rss: Array<{ ts: number; mb: number }> = [];
  private measureFrom = Infinity;
  /** Whether an ORT event kept was a device kernel (not only a node time). */
  sawDeviceKernels = false;

  /** `rssMb`: the resident set now, or null where the platform cannot say (a page). */
  constructor(private readonly rssMb: () => number | null) {}

  /** Starts keeping host spans, steps and memory; everything before (warmup) stays out of the trace. */
  beginMeasurement(): void {
    this.measureFrom = nowUs();
    setSpanRecorder(this);
  }

  record(span: HostSpan): void {
    this.allSpans.push(span);
  }

  /** Runs one step under a `ProfilerStep#<index>` marker and samples the resident set after it. */
  async step<T>(index: number, fn: () => Promise<T>): Promise<T> {
    const t0 = nowUs();
    try {
      return await fn();
    } finally {
      const t1 = nowUs();
      this.steps.push({ index, ts: t0, dur: t1 - t0 });
      const mb = this.rssMb();
      if (mb !== null) this.rss.push({ ts: t1, mb });
    }
  }

  /** Detaches from the span hook (safe to repeat, and before beginMeasurement). */
  stop(): void {
    if (Number.isFinite(this.measureFrom)) setSpanRecorder(null);
  }

  /** The spans inside the measured stretch. */
  spans(): HostSpan[] {
    return this.allSpans.filter((s) => s.ts >= this.measureFrom);
  }

  /** The session worker's run intervals (every span: the ORT clock is aligned on all of its runs). */
  workerRuns(): HostSpan[] {
    return this.allSpans.filter((s) => s.name.endsWith('(worker)'));
  }

  /** An ORT event for the trace on the host clock (`offsetUs`, ort-events.ts), or null when it is not kept. */
  ortEvent(e: TraceEvent, offsetUs: number, pid: number): TraceEvent | null {
    const slim = slimOrtEvent(e, offsetUs, pid);
    if (!slim || slim.ts! < this.measureFrom) return null;
    if (slim.cat === 'Kernel') this.sawDeviceKernels = true;
    return slim;
  }
}
