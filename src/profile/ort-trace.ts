/**
 * ONNX Runtime's own profile files (found by `runtime/ort-profile-file.ts`), their events put on the
 * host's clock. ORT stamps events in µs since its profiler started, which happens some
 * milliseconds after the host's timestamp taken before InferenceSession.create. Each `model_run`
 * is matched to the host's measured worker run interval to remove that offset. The file is read as
 * a stream of events (a training window's can hold millions).
 */
import { findOrtFile } from '../runtime/ort-profile-file.ts';
import { forEachJsonItem } from './json-stream.ts';
import type { TraceEvent } from './schema.ts';

export interface OrtSessionFile {
  key: string;
  /** Host epoch ms taken just before the session was created. */
  startEpochMs: number;
  /** ORT's profile file (read as a stream, never whole). */
  file: string;
  /** The session's `model_run` events (ORT clock): the clock alignment's input. */
  runs: TraceEvent[];
}

/**
 * One streamed pass over ORT's file: `onEvent` sees every event. A session that never ran leaves an
 * empty or cut-off file, read as far as it goes.
 */
export async function eachOrtEvent(file: string, onEvent: (e: TraceEvent) => void | Promise<void>): Promise<void> {
  await forEachJsonItem(file, (v) => (v && typeof v === 'object' ? onEvent(v as TraceEvent) : undefined), { lenient: true });
}

/** The sessions' files and their model_run events (one streamed pass per file). */
export async function readOrtSessions(sessions: ReadonlyArray<{ key: string; profilePrefix: string; startEpochMs: number }>): Promise<OrtSessionFile[]> {
  const out: OrtSessionFile[] = [];
  for (const s of sessions) {
    const file = await findOrtFile(s.profilePrefix);
    if (!file) continue;
    const runs: TraceEvent[] = [];
    await eachOrtEvent(file, (e) => {
      if (e.name === 'model_run' && typeof e.ts === 'number') runs.push({ name: e.name, ts: e.ts, dur: e.dur ?? 0 });
    });
    out.push({ key: s.key, startEpochMs: s.startEpochMs, file, runs });
  }
  return out;
}

/**
 * µs to add to a session's ORT timestamps to get host epoch µs. Every (model_run, worker run) pair
 * within a second proposes the offset that starts the run at the worker's timestamp; the densest
 * 1 ms cluster of proposals wins, so unrelated pairs (other sessions, other runs) are outvoted. A run
 * starts a little after the worker's timestamp, never before, so the cluster's largest proposal is
 * the tightest (starts are compared, not ends: under load the worker learns late that a run ended).
 */
export function ortClockOffset(session: Pick<OrtSessionFile, 'startEpochMs' | 'runs'>, workerRuns: ReadonlyArray<{ ts: number; dur: number }>): number {
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
