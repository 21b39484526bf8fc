/**
 * What every reader accepts: a `profile.json`, a repeat aggregate (both used as they are), or a raw
 * Chrome trace, analysed on the fly with the `profile_summary.json` beside it when there is one. A
 * large trace is streamed through the analysis (never read as one string). A profile is checked
 * against the schema (validate.ts); what is neither exits 1 naming the field that is wrong.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { analyzeTrace } from './analyze.ts';
import { analyzeTraceFile } from './analyze-file.ts';
import { LibreYOLOError } from '../errors.ts';
import { SUMMARY_FILE, type ProfileAnalysis, type ProfileSummary } from './schema.ts';
import { validateProfile } from './validate.ts';

/** Files up to this size are parsed whole (a profile.json is far smaller); larger ones are streamed traces. */
const WHOLE_FILE_BYTES = 64 << 20;

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

export async function loadProfile(path: string): Promise<ProfileAnalysis> {
  if (!existsSync(path)) throw new LibreYOLOError('profile_argument_invalid', `not found: ${path}`);
  const failed = (err: unknown): LibreYOLOError => new LibreYOLOError('profile_unreadable', `failed to analyse ${path}: ${(err as Error).message}`);
  const options = { summary: siblingSummary(path), tracePath: path };
  if (statSync(path).size > WHOLE_FILE_BYTES) {
    try {
      return await analyzeTraceFile(path, options);
    } catch (err) {
      throw failed(err);
    }
  }
  let data: unknown;
  const text = readFileSync(path, 'utf8');
  try {
    data = JSON.parse(text);
  } catch (err) {
    const nan = /(^|[\s:,[])-?(NaN|Infinity)\b/.test(text) ? '; NaN and Infinity are not JSON, and a profile never holds them' : '';
    throw new LibreYOLOError('profile_unreadable', `failed to analyse ${path}: not valid JSON (${(err as Error).message})${nan}`);
  }
  if (isProfile(data)) {
    try {
      return validateProfile(data);
    } catch (err) {
      throw new LibreYOLOError('profile_unreadable', `failed to analyse ${path}: not a valid profile: ${(err as Error).message}`);
    }
  }
  try {
    return analyzeTrace(data, options);
  } catch (err) {
    throw failed(err);
  }
}
