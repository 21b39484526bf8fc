/**
 * What every reader accepts: a `profile.json`, a repeat aggregate (both used as they are), or a raw
 * Chrome trace, analysed on the fly with the `profile_summary.json` beside it when there is one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { analyzeTrace } from './analyze.ts';
import { ProfileError } from './errors.ts';
import { SUMMARY_FILE, type ProfileAnalysis, type ProfileSummary } from './schema.ts';

const isProfile = (d: unknown): d is ProfileAnalysis =>
  Boolean(d) && typeof d === 'object' && !Array.isArray(d) && String((d as { schema?: unknown }).schema ?? '').startsWith('libreyolo.profile.analysis');

function siblingSummary(tracePath: string): ProfileSummary {
  try {
    const s: unknown = JSON.parse(readFileSync(join(dirname(tracePath), SUMMARY_FILE), 'utf8'));
    return s && typeof s === 'object' && !Array.isArray(s) ? (s as ProfileSummary) : {};
  } catch {
    return {};
  }
}

export function loadProfile(path: string): ProfileAnalysis {
  if (!existsSync(path)) throw new ProfileError(`not found: ${path}`, 2);
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ProfileError(`failed to analyse ${path}: ${(err as Error).message}`, 1);
  }
  if (isProfile(data)) return data;
  try {
    return analyzeTrace(data, { summary: siblingSummary(path), tracePath: path });
  } catch (err) {
    throw new ProfileError(`failed to analyse ${path}: ${(err as Error).message}`, 1);
  }
}
