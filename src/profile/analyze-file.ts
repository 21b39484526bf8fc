/** The trace analysis (analyze.ts) over a trace file in Node, streamed rather than read whole. */
import { TraceAnalyzer, type AnalyzeOptions, type TraceObserver } from './analyze.ts';
import { forEachJsonItem } from './json-stream.ts';
import type { ProfileAnalysis, TraceEvent } from './schema.ts';

/**
 * A trace file, streamed twice through the analysis: memory stays bounded by the number of distinct
 * kernel and op names, whatever the number of events.
 */
export async function analyzeTraceFile(path: string, options: AnalyzeOptions & { observer?: TraceObserver } = {}): Promise<ProfileAnalysis> {
  const t = new TraceAnalyzer(options.observer);
  const first = await forEachJsonItem(path, (e) => t.pass1(e as TraceEvent));
  if (first.shape === 'object' && !first.hasEvents) throw new Error("not a profile (no 'schema' field) and not a trace (no 'traceEvents' field)");
  t.endPass1();
  await forEachJsonItem(path, (e) => t.pass2(e as TraceEvent));
  return t.result(options);
}

