/**
 * ONNX Runtime's own profile files (found by `runtime/ort-profile-file.ts`) in Node, read as a
 * stream of events (a training window's can hold millions); ort-events.ts puts them on the host's clock.
 */
import { findOrtFile } from '../runtime/ort-profile-file.ts';
import { forEachJsonItem } from './json-stream.ts';
import { modelRunOf, type OrtRuns } from './ort-events.ts';
import type { TraceEvent } from './schema.ts';

export interface OrtSessionFile extends OrtRuns {
  key: string;
  /** ORT's profile file (read as a stream, never whole). */
  file: string;
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
      const run = modelRunOf(e);
      if (run) runs.push(run);
    });
    out.push({ key: s.key, startEpochMs: s.startEpochMs, file, runs });
  }
  return out;
}
