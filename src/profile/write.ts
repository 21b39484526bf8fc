/**
 * The end of every measuring loop: analyse the merged trace (already streamed to its file) with the
 * loop's summary, let the loop give its verdict, and write `profile_summary.json`, the
 * self-contained `profile.json` and `timeline.html`. Without a trace the loop's own fallback
 * profile stands in (and there is no timeline).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/fs.ts';
import { analyzeTraceFile } from './analyze-file.ts';
import { concludeProfile, type VerdictOf } from './conclude.ts';
import { pyJson } from './pyfmt.ts';
import { PROFILE_FILE, SUMMARY_FILE, TIMELINE_FILE, TRACE_FILE, type ProfileAnalysis, type ProfileSummary } from './schema.ts';
import { TimelineCollector } from './timeline-data.ts';
import { validateProfile } from './validate.ts';
import { timelineHtml } from './timeline-html.ts';

export interface FinalizeOptions {
  /** Where the files go; null keeps the profile in memory (the trace goes to a temp file). */
  saveDir: string | null;
  /** Writes the merged trace to the path it is given; absent: no trace. */
  writeTrace: ((path: string) => Promise<void>) | null;
  summary: ProfileSummary;
  /** The profile when there is no trace. */
  fallback: (summary: ProfileSummary) => ProfileAnalysis;
  /** The loop's verdict, given the analysis (a memory-pressure verdict from the analysis stands). */
  verdict?: VerdictOf;
}

/** Writes the trace where it belongs (or to a temp folder), runs `use` on its path, cleans up. */
async function withTrace<T>(saveDir: string | null, write: (path: string) => Promise<void>, use: (path: string) => Promise<T>): Promise<T> {
  const dir = saveDir ?? (await mkdtemp(join(tmpdir(), 'libreyolo-trace-')));
  try {
    const path = join(dir, TRACE_FILE);
    await write(path);
    return await use(path);
  } finally {
    if (!saveDir) await rm(dir, { recursive: true, force: true });
  }
}

export async function finalizeProfile(o: FinalizeOptions): Promise<ProfileAnalysis> {
  // The timeline is curated while the analysis streams the trace; no trace, no timeline.
  const timeline = o.writeTrace && o.saveDir ? new TimelineCollector() : null;
  const a = o.writeTrace
    ? await withTrace(o.saveDir, o.writeTrace, (path) => analyzeTraceFile(path, {
      summary: o.summary, tracePath: o.saveDir ? path : null, ...(timeline ? { observer: timeline } : {}),
    }))
    : o.fallback(o.summary);
  concludeProfile(a, o.summary, o.verdict);
  if (o.saveDir) {
    await writeFileAtomic(join(o.saveDir, SUMMARY_FILE), `${pyJson(o.summary, 2)}\n`);
    await writeFileAtomic(join(o.saveDir, PROFILE_FILE), pyJson(validateProfile(a)));
    if (timeline) {
      await writeFileAtomic(join(o.saveDir, TIMELINE_FILE), timelineHtml({ profile: a, timeline: timeline.result(), latencySamples: o.summary.latency_samples_ms ?? null }));
    }
  }
  return a;
}
