/**
 * `profile report <profile> [--out file.html]`: `timeline.html` regenerated from any profile (a
 * profile.json, a repeat aggregate, or a raw trace). The timeline lanes come from the profile's
 * trace (its `trace` field, else the `profile_trace.json` beside it), streamed once more; without
 * one the page has the panel only. And `profile compare --html`. An existing file is never
 * replaced: the default name increments (`timeline2.html`), an explicit one that exists is refused.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { writeFileAtomic } from '../util/fs.ts';
import { analyzeTraceFile } from './analyze-file.ts';
import { LibreYOLOError } from '../errors.ts';
import { loadProfile } from './load.ts';
import { SUMMARY_FILE, TIMELINE_FILE, TRACE_FILE, type ProfileAnalysis } from './schema.ts';
import { TimelineCollector } from './timeline-data.ts';
import { compareHtml, timelineHtml } from './timeline-html.ts';

/** The trace a profile was made from, if it is still there: its `trace` field (as recorded, from the cwd), else the sibling file. */
function traceOf(profilePath: string, a: ProfileAnalysis): string | null {
  const candidates = [a.trace, join(dirname(profilePath), TRACE_FILE)].filter((p): p is string => typeof p === 'string' && p.length > 0);
  return candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? null;
}

function latencySamples(tracePath: string | null, profilePath: string): number[] | null {
  for (const dir of new Set([dirname(profilePath), ...(tracePath ? [dirname(tracePath)] : [])])) {
    try {
      const s = JSON.parse(readFileSync(join(dir, SUMMARY_FILE), 'utf8')) as { latency_samples_ms?: unknown };
      if (Array.isArray(s.latency_samples_ms) && s.latency_samples_ms.every((x) => typeof x === 'number' && Number.isFinite(x))) return s.latency_samples_ms;
    } catch {
      // no summary there
    }
  }
  return null;
}

/** `out`, or the first free `timeline[N].html` beside the profile. */
function outputPath(profilePath: string, out: string | undefined, fallbackName: string): string {
  if (out !== undefined) {
    if (existsSync(out)) throw new LibreYOLOError('profile_argument_invalid', `${out} already exists; pass another --out path (nothing is overwritten)`);
    return out;
  }
  const ext = extname(fallbackName);
  const stem = basename(fallbackName, ext);
  let p = join(dirname(profilePath), fallbackName);
  for (let n = 2; existsSync(p); n++) p = join(dirname(profilePath), `${stem}${n}${ext}`);
  return p;
}

export async function writeReport(profilePath: string, out?: string): Promise<{ path: string; traced: boolean }> {
  const a = await loadProfile(profilePath);
  const trace = traceOf(profilePath, a);
  let timeline = null;
  if (trace) {
    const collector = new TimelineCollector();
    try {
      await analyzeTraceFile(trace, { observer: collector });
    } catch (err) {
      throw new LibreYOLOError('profile_unreadable', `failed to analyse ${trace}: ${(err as Error).message}`);
    }
    timeline = collector.result();
  }
  const path = outputPath(profilePath, out, TIMELINE_FILE);
  await writeFileAtomic(path, timelineHtml({ profile: a, timeline, latencySamples: latencySamples(trace, profilePath) }));
  return { path, traced: trace !== null };
}

export async function writeCompareHtml(a: ProfileAnalysis, b: ProfileAnalysis, beforePath: string, afterPath: string, out: string): Promise<string> {
  if (existsSync(out)) throw new LibreYOLOError('profile_argument_invalid', `${out} already exists; pass another --html path (nothing is overwritten)`);
  await writeFileAtomic(out, compareHtml(a, b, beforePath, afterPath));
  return out;
}
