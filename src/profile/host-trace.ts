/**
 * The host's part of the merged Chrome trace, as events: labelled processes and lanes, the
 * `ProfilerStep#N` markers, the `step/<phase>` annotations (same-phase spans merged), every host span
 * and the memory samples, in the original's vocabulary so the same analysis reads it, a torch trace,
 * or a training trace. chrome-trace.ts streams it to a file (Node); the browser analyses it in memory.
 */
import type { HostSpan } from '../runtime/spans.ts';
import { PHASE_ORDER, PHASE_PREFIX, STEP_MARKER, type TraceEvent } from './schema.ts';

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
/** First pid of the ORT session processes in the merged trace. */
export const ORT_PID = 10;
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

/** The host record's events (`hostLabel` names its process: the pid in Node, the page in a browser). */
export function hostTraceEvents(parts: Pick<TraceParts, 'spans' | 'steps' | 'rss'>, hostLabel: string): TraceEvent[] {
  const out: TraceEvent[] = [
    meta('process_name', HOST_PID, `libreyolo host (${hostLabel})`), meta('process_sort_index', HOST_PID, 0),
    meta('thread_name', HOST_PID, 'steps', LANE.steps), meta('thread_name', HOST_PID, 'phases', LANE.phases),
    meta('thread_name', HOST_PID, 'main thread (JS)', LANE.main), meta('thread_name', HOST_PID, 'session worker (JS)', LANE.worker),
  ];
  for (const tid of new Set(parts.spans.map(laneOf))) if (tid >= JS_THREAD_LANE) out.push(meta('thread_name', HOST_PID, `JS thread ${tid - JS_THREAD_LANE}`, tid));
  for (const s of parts.steps) {
    out.push({ ph: 'X', cat: 'user_annotation', name: `${STEP_MARKER}#${s.index}`, ts: r3(s.ts), dur: r3(s.dur), pid: HOST_PID, tid: LANE.steps });
  }
  out.push(...phaseIntervals(parts.spans));
  for (const s of parts.spans) {
    out.push({ ph: 'X', cat: 'host', name: s.name, ts: r3(s.ts), dur: r3(s.dur), pid: HOST_PID, tid: laneOf(s), args: { stage: s.cat, ...s.args } });
  }
  for (const m of parts.rss) out.push({ ph: 'C', name: 'memory', ts: r3(m.ts), pid: HOST_PID, args: { rss_mb: Math.round(m.mb * 10) / 10 } });
  return out;
}

/** The metadata that labels an ORT session's process (it goes before the session's events). */
export const sessionProcessEvents = (s: Pick<SessionEvents, 'key' | 'pid'>): TraceEvent[] =>
  [meta('process_name', s.pid, `onnxruntime session ${s.key}`), meta('process_sort_index', s.pid, s.pid)];

/** The metadata that labels the threads a session's events used (after them: known once they are read). */
export const sessionThreadEvents = (s: Pick<SessionEvents, 'pid'>, tids: Iterable<number | string>): TraceEvent[] =>
  [...tids].map((tid) => meta('thread_name', s.pid, 'ORT execution thread', tid as number));
