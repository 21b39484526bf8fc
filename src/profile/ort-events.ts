/**
 * ONNX Runtime's profile events put on the host's clock, wherever they come from (ORT's file in Node,
 * the events onnxruntime-web prints in the browser's session worker). ORT stamps events in µs since
 * its profiler started, which happens some milliseconds after the host's timestamp taken before
 * InferenceSession.create. Each `model_run` is matched to the host's measured worker run interval
 * to remove that offset.
 */
import type { TraceEvent } from './schema.ts';

/** What the clock alignment needs of one profiled session. */
export interface OrtRuns {
  /** Host epoch ms taken just before the session was created. */
  startEpochMs: number;
  /** The session's `model_run` events (ORT clock). */
  runs: TraceEvent[];
}

/** A `model_run` event slimmed to what the clock alignment reads, or null for any other event. */
export function modelRunOf(e: TraceEvent): TraceEvent | null {
  return e.name === 'model_run' && typeof e.ts === 'number' ? { name: e.name, ts: e.ts, dur: e.dur ?? 0 } : null;
}

/**
 * µs to add to a session's ORT timestamps to get host epoch µs. Every (model_run, worker run) pair
 * within a second proposes the offset that starts the run at the worker's timestamp; the densest
 * 1 ms cluster of proposals wins, so unrelated pairs (other sessions, other runs) are outvoted. A run
 * starts a little after the worker's timestamp, never before, so the cluster's largest proposal is
 * the tightest (starts are compared, not ends: under load the worker learns late that a run ended).
 */
export function ortClockOffset(session: OrtRuns, workerRuns: ReadonlyArray<{ ts: number; dur: number }>): number {
  const base = session.startEpochMs * 1000;
  const runs = session.runs.filter((e) => e.name === 'model_run' && typeof e.ts === 'number');
  const proposals: number[] = [];
  for (const r of runs) {
    const approx = base + r.ts!;
    for (const w of workerRuns) if (Math.abs(w.ts - approx) < 1e6) proposals.push(w.ts - r.ts!);
  }
  if (!proposals.length) return base;
  proposals.sort((a, b) => a - b);
  let best: [number, number] = [0, 0];
  for (let i = 0, j = 0; j < proposals.length; j++) {
    while (proposals[j]! - proposals[i]! > 1000) i++;
    if (j - i > best[1] - best[0]) best = [i, j];
  }
  return proposals[best[1]]!;
}

const NODE_ARGS = ['op_name', 'provider', 'mem_in_use_peak', 'mem_arena_held', 'mem_arena_held_delta'];

/**
 * One ORT complete event on the host clock, slimmed for the merged trace (null for other phases):
 * node names lose the `_kernel_time` suffix, and only the args the analysis reads are kept (shapes
 * and per-thread scheduling stats would multiply the file size).
 */
export function slimOrtEvent(e: TraceEvent, offsetUs: number, pid: number): TraceEvent | null {
  if (e.ph !== 'X' || typeof e.ts !== 'number') return null;
  const node = e.cat === 'Node';
  let args = e.args;
  if (node && args) {
    const kept: Record<string, unknown> = {};
    let any = false;
    for (const k of NODE_ARGS) {
      if (args[k] !== undefined) {
        kept[k] = args[k];
        any = true;
      }
    }
    args = any ? kept : undefined;
  }
  return {
    ph: 'X', cat: e.cat, name: node ? String(e.name ?? '').replace(/_kernel_time$/, '') : e.name,
    ts: Math.round((e.ts + offsetUs) * 1000) / 1000, dur: e.dur ?? 0, pid, tid: e.tid ?? 0, ...(args && Object.keys(args).length ? { args } : {}),
  };
}
