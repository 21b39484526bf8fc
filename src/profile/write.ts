/**
 * The end of every measuring loop: write the merged trace, analyse it with the loop's summary, let
 * the loop give its verdict, and write `profile_summary.json` and the self-contained `profile.json`.
 * Without a trace the loop's own fallback profile stands in for the analysis.
 */
import { join } from 'node:path';
import { writeFileAtomic } from '../util/fs.ts';
import { analyzeTrace, applyVerdict } from './analyze.ts';
import { pyJson } from './pyfmt.ts';
import { PROFILE_FILE, SUMMARY_FILE, TRACE_FILE, type ChromeTrace, type ProfileAnalysis, type ProfileSummary } from './schema.ts';
import type { Verdict } from './verdict.ts';

export interface FinalizeOptions {
  /** Where the files go; null keeps everything in memory. */
  saveDir: string | null;
  trace: ChromeTrace | null;
  summary: ProfileSummary;
  /** The profile when there is no trace. */
  fallback: (summary: ProfileSummary) => ProfileAnalysis;
  /** The loop's verdict, given the analysis (a memory-pressure verdict from the analysis stands). */
  verdict?: (analysis: ProfileAnalysis) => Verdict;
}

export async function finalizeProfile(o: FinalizeOptions): Promise<ProfileAnalysis> {
  const tracePath = o.trace && o.saveDir ? join(o.saveDir, TRACE_FILE) : null;
  if (tracePath) await writeFileAtomic(tracePath, JSON.stringify(o.trace));
  const a = o.trace ? analyzeTrace(o.trace, { summary: o.summary, tracePath }) : o.fallback(o.summary);
  if (o.verdict) {
    const v = o.verdict(a);
    applyVerdict(a, v.bound, v.why);
  }
  o.summary.bound = a.bound;
  o.summary.bound_why = a.bound_why;
  if (o.saveDir) {
    await writeFileAtomic(join(o.saveDir, SUMMARY_FILE), `${pyJson(o.summary, 2)}\n`);
    await writeFileAtomic(join(o.saveDir, PROFILE_FILE), pyJson(a));
  }
  return a;
}
