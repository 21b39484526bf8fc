/**
 * The merged Chrome trace (`profile_trace.json`): the host's steps, phases and spans and every ORT
 * session's events on one clock, in labelled processes and threads, loadable in Perfetto and
 * chrome://tracing. It uses the original's vocabulary (`ProfilerStep#N` markers, `step/<phase>`
 * annotations) so the same analysis reads it, a torch trace, or a training trace. It is written as a
 * stream (trace-writer.ts): the ORT events go from ORT's file to this one without being held.
 */
import type { HostSpan } from '../runtime/spans.ts';
import { PHASE_ORDER, PHASE_PREFIX, STEP_MARKER, type TraceEvent } from './schema.ts';
import { TraceWriter } from './trace-writer.ts';

export interface StepRecord {
  index: number;
  /** Epoch µs. */
  ts: number;
  dur: number;
}

/** One ORT session's events, streamed (from ORT's file, already on the host clock) into the trace. */
export interface SessionEvents {
  key: string;
  pid: number;
  /** Calls `emit` with each event in turn, awaiting what it returns. */
  each: (emit: (e: TraceEvent) => void | Promise<void>) => Promise<void>;
}

export interface TraceParts {
  spans: readonly HostSpan[];
  steps: readonly StepRecord[];
  /** Resident set samples (epoch µs, MB). */
  rss: ReadonlyArray<{ ts: number; mb: number }>;
  sessions: readonly SessionEvents[];
}

export const HOST_PID = 1;
const LANE = { steps: 1, phases: 2, main: 3, worker: 4 } as const;
const JS_THREAD_LANE = 100;

const meta = (name: 'process_name' | 'thread_name' | 'process_sort_index', pid: number, value: string | number, tid = 0): TraceEvent =>
  ({ ph: 'M', name, pid, tid, args: name === 'process_sort_index' ? { sort_index: value } : { name: value } });

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** Same-phase host spans merged into one interval per contiguous stretch: the phase lane. */
function phaseIntervals(spans: readonly HostSpan[]): TraceEvent[] {
  const out: TraceEvent[] = [];
  for (const phase of PHASE_ORDER) {
    const iv = spans.filter((s) => s.cat === phase).map((s) => [s.ts, s.ts + s.dur] as [number, number]).sort((a, b) => a[0] - b[0]);
    let cur: [number, number] | null = null;
    const flush = (): void => {
      if (cur) out.push({ ph: 'X', cat: 'user_annotation', name: `${PHASE_PREFIX}${phase}`, ts: r3(cur[0]), dur: r3(cur[1] - cur[0]), pid: HOST_PID, tid: LANE.phases });
    };
    for (const [s, e] of iv) {
      if (cur && s <= cur[1]) cur[1] = Math.max(cur[1], e);
      else {
        flush();
        cur = [s, e];
      }
    }
    flush();
  }
  return out;
}

/** A span measured on the session worker (its name says so) goes on the worker's lane; other JS threads get their own. */
const laneOf = (s: HostSpan): number => (s.name.endsWith('(worker)') ? LANE.worker : s.tid === 0 ? LANE.main : JS_THREAD_LANE + s.tid);

/**
 * Writes the merged trace to `path` as a stream (host record first, then each session's events as
 * they are read from ORT's file); returns the number of events written.
 */
export async function writeChromeTrace(path: string, parts: TraceParts): Promise<number> {
  const w = await TraceWriter.open(path);
  try {
    const put = async (e: TraceEvent): Promise<void> => {
      await w.write(e);
    };
    for (const e of [
      meta('process_name', HOST_PID, `libreyolo host (pid ${process.pid})`), meta('process_sort_index', HOST_PID, 0),
      meta('thread_name', HOST_PID, 'steps', LANE.steps), meta('thread_name', HOST_PID, 'phases', LANE.phases),
      meta('thread_name', HOST_PID, 'main thread (JS)', LANE.main), meta('thread_name', HOST_PID, 'session worker (JS)', LANE.worker),
    ]) await put(e);
    for (const tid of new Set(parts.spans.map(laneOf))) if (tid >= JS_THREAD_LANE) await put(meta('thread_name', HOST_PID, `JS thread ${tid - JS_THREAD_LANE}`, tid));
    for (const s of parts.steps) {
      await put({ ph: 'X', cat: 'user_annotation', name: `${STEP_MARKER}#${s.index}`, ts: r3(s.ts), dur: r3(s.dur), pid: HOST_PID, tid: LANE.steps });
    }
    for (const e of phaseIntervals(parts.spans)) await put(e);
    for (const s of parts.spans) {
      await put({ ph: 'X', cat: 'host', name: s.name, ts: r3(s.ts), dur: r3(s.dur), pid: HOST_PID, tid: laneOf(s), args: { stage: s.cat, ...s.args } });
    }
    for (const m of parts.rss) await put({ ph: 'C', name: 'memory', ts: r3(m.ts), pid: HOST_PID, args: { rss_mb: Math.round(m.mb * 10) / 10 } });
    for (const s of parts.sessions) {
      await put(meta('process_name', s.pid, `onnxruntime session ${s.key}`));
      await put(meta('process_sort_index', s.pid, s.pid));
      const tids = new Set<number | string>();
      await s.each((e) => {
        if (e.tid !== undefined) tids.add(e.tid);
        return w.write(e);
      });
      for (const tid of tids) await put(meta('thread_name', s.pid, 'ORT execution thread', tid as number));
    }
    await w.close();
    return w.count;
  } catch (err) {
    await w.abort();
    throw err;
  }
}
