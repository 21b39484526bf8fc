/**
 * The last step of every profile, on any platform: the measuring loop's verdict on the analysis
 * (a memory-pressure verdict from the analysis stands), mirrored into the loop's summary.
 */
import { applyVerdict } from './analyze.ts';
import type { ProfileAnalysis, ProfileSummary } from './schema.ts';
import type { Verdict } from './verdict.ts';

export type VerdictOf = (analysis: ProfileAnalysis) => Verdict;

export function concludeProfile(a: ProfileAnalysis, summary: ProfileSummary, verdict?: VerdictOf): ProfileAnalysis {
  if (verdict) {
    const v = verdict(a);
    applyVerdict(a, v.bound, v.why);
  }
  summary.bound = a.bound;
  summary.bound_why = a.bound_why;
  return a;
}
