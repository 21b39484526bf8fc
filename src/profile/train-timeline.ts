/**
 * A training window's ORT events, read as streams from ORT's file: its run times, each node's start
 * on the host clock (typed arrays, ~9 bytes a node, for the phase split), and the events slimmed
 * for the merged trace. ORT's file is read once: its events carry per-thread scheduling stats and
 * shapes (~950 bytes each, 100 MB for six yolo9t steps at b4/320), so the first pass also writes
 * the slim events (~120 bytes) to a file beside it, which the second pass reads instead. A trace that would exceed TRACE_EVENT_CAP ORT events
 * keeps node events only for the analysis window's steps and the longest other steps (up to
 * KEEP_STEPS in all); every step keeps its marker, phases and `model_run` span.
 */
import type { SessionEvents, StepRecord } from './chrome-trace.ts';
import { ortClockOffset, slimOrtEvent } from './ort-events.ts';
import { forEachJsonItem } from './json-stream.ts';
import { eachOrtEvent } from './ort-trace.ts';
import type { TraceEvent } from './schema.ts';
import { TraceWriter } from './trace-writer.ts';

/** ORT node events written at most (about 300 MB of trace); see the README's profile section. */
export const TRACE_EVENT_CAP = 2_000_000;
/** Steps kept in full when the cap applies. */
export const KEEP_STEPS = 10;
const BACKWARD_NODE = '/backward/';

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

class F64Builder {
  data = new Float64Array(1024);
  length = 0;
  push(x: number): void {
    if (this.length === this.data.length) {
      const next = new Float64Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = x;
  }
  view(): Float64Array {
    return this.data.subarray(0, this.length);
  }
}

/** Node start times (host µs, ascending) and whether each is a gradient node. */
export class NodeTimes {
  constructor(readonly ts: Float64Array, readonly backward: Uint8Array) {}

  get length(): number {
    return this.ts.length;
  }

  /** The nodes of several sessions in one ascending timeline. */
  static merge(list: readonly NodeTimes[]): NodeTimes {
    const n = list.reduce((a, t) => a + t.length, 0);
    const ts = new Float64Array(n);
    const bw = new Uint8Array(n);
    let k = 0;
    for (const t of list) {
      ts.set(t.ts, k);
      bw.set(t.backward, k);
      k += t.length;
    }
    return NodeTimes.sorted(ts, bw);
  }

  static sorted(ts: Float64Array, bw: Uint8Array): NodeTimes {
    let ordered = true;
    for (let i = 1; i < ts.length && ordered; i++) ordered = ts[i - 1]! <= ts[i]!;
    if (ordered) return new NodeTimes(ts, bw);
    const idx = Uint32Array.from({ length: ts.length }, (_, i) => i).sort((a, b) => ts[a]! - ts[b]!);
    return new NodeTimes(Float64Array.from(idx, (i) => ts[i]!), Uint8Array.from(idx, (i) => bw[i]!));
  }
}

/**
 * Per-run clock alignment. One offset per session is not enough in training: `session.run`
 * converts ~2M parameter feeds before ORT's own `model_run` starts, and that time changes from run
 * to run, so a single offset can even pair a run with its neighbour. The profile ends right after
 * the last measured step, so the session's last N model_runs are the N measured worker runs, in
 * order; each is moved to end where its worker run ends (the output copy after it is small) and
 * every event inside it moves with it. Returns ts (host µs, one offset applied) -> aligned ts.
 */
export function runAligner(runs: ReadonlyArray<{ ts: number; dur: number }>, workerRuns: ReadonlyArray<{ ts: number; dur: number }>): (ts: number) => number {
  const sortedRuns = [...runs].sort((a, b) => a.ts - b.ts);
  const workers = [...workerRuns].sort((a, b) => a.ts - b.ts);
  const n = Math.min(sortedRuns.length, workers.length);
  if (!n) return (ts) => ts;
  const paired = sortedRuns.slice(sortedRuns.length - n);
  const measured = workers.slice(workers.length - n);
  const shifts = paired.map((r, k) => {
    const w = measured[k]!;
    const dur = Math.min(r.dur, w.dur);
    return { start: r.ts, end: r.ts + r.dur, shift: w.ts + w.dur - dur - r.ts };
  });
  return (ts) => {
    let lo = 0, hi = shifts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (shifts[mid]!.start - 1 <= ts) lo = mid + 1; else hi = mid;
    }
    const sh = shifts[lo - 1];
    return sh && ts <= sh.end + 1 ? ts + sh.shift : ts;
  };
}

export interface SessionTimeline {
  nodes: NodeTimes;
  /** The session's events for the trace; with `keep`, node events only where keep(ts). */
  stream(keep: ((ts: number) => boolean) | null): SessionEvents;
}

/**
 * One streamed pass over a train-step session's ORT file; its slim events (on ORT's clock) go to
 * `${file}.slim.json`, in the folder of ORT's file, which the caller removes with it.
 */
export async function readSessionTimeline(
  file: string, key: string, startEpochMs: number, pid: number, workerRuns: ReadonlyArray<{ ts: number; dur: number }>, measureFrom: number,
): Promise<SessionTimeline> {
  const runs: TraceEvent[] = [];
  const raw = new F64Builder();
  const bw: number[] = [];
  const slimFile = `${file}.slim.json`;
  const slimWriter = await TraceWriter.open(slimFile);
  try {
    await eachOrtEvent(file, (e) => {
      if (e.ph !== 'X' || typeof e.ts !== 'number') return undefined;
      if (e.name === 'model_run') runs.push({ name: e.name, ts: e.ts, dur: e.dur ?? 0 });
      else if (e.cat === 'Node') {
        raw.push(e.ts);
        bw.push(String(e.name ?? '').includes(BACKWARD_NODE) ? 1 : 0);
      }
      const slim = slimOrtEvent(e, 0, pid);
      return slim ? slimWriter.write(slim) : undefined;
    });
    await slimWriter.close();
  } catch (err) {
    await slimWriter.abort();
    throw err;
  }
  const offset = ortClockOffset({ startEpochMs, runs }, workerRuns);
  const align = runAligner(runs.map((r) => ({ ts: r3(r.ts! + offset), dur: r.dur ?? 0 })), workerRuns);
  const host = (ortTs: number): number => r3(align(r3(ortTs + offset)));
  const ts = new F64Builder();
  const flags: number[] = [];
  const rawTs = raw.view();
  for (let i = 0; i < rawTs.length; i++) {
    const t = host(rawTs[i]!);
    if (t < measureFrom) continue;
    ts.push(t);
    flags.push(bw[i]!);
  }
  return {
    nodes: NodeTimes.sorted(ts.view().slice(), Uint8Array.from(flags)),
    stream: (keep) => ({
      key, pid,
      each: async (emit) => {
        await forEachJsonItem(slimFile, (v) => {
          const slim = v as TraceEvent;
          slim.ts = host(slim.ts!);
          if (slim.ts < measureFrom || (keep && slim.cat === 'Node' && !keep(slim.ts))) return undefined;
          return emit(slim);
        });
      },
    }),
  };
}

/** Index of the step whose [ts, ts + dur] holds `t`, or -1. `steps` ascending. */
function stepAt(steps: readonly StepRecord[], t: number): number {
  let lo = 0, hi = steps.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid]!.ts <= t) lo = mid + 1; else hi = mid;
  }
  const k = lo - 1;
  return k >= 0 && t <= steps[k]!.ts + steps[k]!.dur ? k : -1;
}

/**
 * The cap: null when the trace fits; else which steps keep their node events (the analysis window,
 * markers 2..7 as window.ts picks them, then the longest steps that fit) and a note saying so.
 */
export function traceCap(sessions: ReadonlyArray<{ nodes: NodeTimes }>, steps: readonly StepRecord[], cap = TRACE_EVENT_CAP): { keep: ((ts: number) => boolean) | null; note: string | null } {
  const total = sessions.reduce((a, s) => a + s.nodes.length, 0);
  if (total <= cap || !steps.length) return { keep: null, note: null };
  const counts = new Float64Array(steps.length);
  for (const s of sessions) for (let i = 0; i < s.nodes.length; i++) {
    const k = stepAt(steps, s.nodes.ts[i]!);
    if (k >= 0) counts[k] = counts[k]! + 1;
  }
  const keep = new Set<number>();
  const windowEnd = steps.length >= 4 ? Math.min(steps.length - 1, 8) : steps.length;
  for (let k = steps.length >= 4 ? 2 : 0; k < windowEnd; k++) keep.add(k);
  let kept = [...keep].reduce((a, k) => a + counts[k]!, 0);
  const longest = steps.map((s, k) => [s.dur, k] as const).filter(([, k]) => !keep.has(k)).sort((a, b) => b[0] - a[0]);
  const limit = Math.max(KEEP_STEPS, keep.size);
  for (const [, k] of longest) {
    if (keep.size >= limit || kept + counts[k]! > cap) break;
    keep.add(k);
    kept += counts[k]!;
  }
  const list = [...keep].sort((a, b) => a - b);
  return {
    keep: (ts) => keep.has(stepAt(steps, ts)),
    note: `trace capped at ${cap} ORT node events (the window had ${total}): node events are kept for steps ${list.join(', ')} ` +
      `(the analysis window and the longest steps); the other ${steps.length - list.length} steps keep their markers, phases and model_run spans`,
  };
}
