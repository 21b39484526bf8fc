/**
 * The merged Chrome trace (`profile_trace.json`): the host's record (host-trace.ts) and every ORT
 * session's events on one clock, loadable in Perfetto and chrome://tracing. It is written as a
 * stream (trace-writer.ts): the ORT events go from ORT's file to this one without being held.
 */
import { hostTraceEvents, sessionProcessEvents, sessionThreadEvents, type TraceParts } from './host-trace.ts';
import type { TraceEvent } from './schema.ts';
import { TraceWriter } from './trace-writer.ts';

export type { SessionEvents, StepRecord, TraceParts } from './host-trace.ts';

/**
 * Writes the merged trace to `path` as a stream (host record first, then each session's events as
 * they are read from ORT's file); returns the number of events written.
 */
export async function writeChromeTrace(path: string, parts: TraceParts): Promise<number> {
  const w = await TraceWriter.open(path);
  try {
    for (const e of hostTraceEvents(parts, `pid ${process.pid}`)) await w.write(e);
    for (const s of parts.sessions) {
      for (const e of sessionProcessEvents(s)) await w.write(e);
      const tids = new Set<number | string>();
      await s.each((e: TraceEvent) => {
        if (e.tid !== undefined) tids.add(e.tid);
        return w.write(e);
      });
      for (const e of sessionThreadEvents(s, tids)) await w.write(e);
    }
    await w.close();
    return w.count;
  } catch (err) {
    await w.abort();
    throw err;
  }
}
