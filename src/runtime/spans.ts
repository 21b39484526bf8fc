/**
 * Host spans: named intervals of the package's own work (decode, letterbox, forward call, NMS,
 * results, worker hand-offs) recorded only while a profiler is attached. With no recorder the cost
 * is one null check, so the predict path can always be instrumented.
 */
import { currentThreadId } from '../util/platform.ts';

export interface HostSpan {
  name: string;
  /** Category, e.g. `preprocess`, `forward`, `postprocess`, `io`. */
  cat: string;
  /** Start, epoch microseconds. */
  ts: number;
  /** Duration, microseconds. */
  dur: number;
  tid: number;
  args?: Record<string, unknown>;
}

export interface SpanRecorder {
  record(span: HostSpan): void;
}

let recorder: SpanRecorder | null = null;

export function setSpanRecorder(r: SpanRecorder | null): void {
  recorder = r;
}

export function spansEnabled(): boolean {
  return recorder !== null;
}

const nowUs = (): number => (performance.timeOrigin + performance.now()) * 1000;

/** Times `fn` (sync or async) as a span when a recorder is attached. */
export function span<T>(name: string, cat: string, fn: () => T, args?: Record<string, unknown>): T {
  if (!recorder) return fn();
  const start = nowUs();
  const done = (): void => recorder?.record({ name, cat, ts: start, dur: nowUs() - start, tid: currentThreadId(), ...(args ? { args } : {}) });
  const out = fn();
  if (out instanceof Promise) return out.finally(done) as T;
  done();
  return out;
}

/** Records an interval measured elsewhere (e.g. a worker's run time reported back). */
export function recordSpan(name: string, cat: string, startEpochMs: number, durMs: number, args?: Record<string, unknown>): void {
  recorder?.record({ name, cat, ts: startEpochMs * 1000, dur: durMs * 1000, tid: currentThreadId(), ...(args ? { args } : {}) });
}
