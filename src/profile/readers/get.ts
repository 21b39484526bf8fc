/** `profile get`: one metric and nothing else, for scripted loops. */
import { LibreYOLOError } from '../../errors.ts';
import { pyStr } from '../pyfmt.ts';
import type { ProfileAnalysis } from '../schema.ts';
import type { ReaderOutput } from './output.ts';

export function getReader(a: ProfileAnalysis, tracePath: string, field: string | undefined): ReaderOutput {
  const m = a.metrics;
  if (!m || typeof m !== 'object') throw new LibreYOLOError('profile_unreadable', `failed to analyse ${tracePath}: the profile has no metrics`);
  if (!field) {
    const keys = Object.keys(m).sort();
    return { json: keys, compact: true, text: `available metrics:\n  ${keys.join('\n  ')}` };
  }
  if (!(field in m)) throw new LibreYOLOError('profile_argument_invalid', `unknown metric '${field}'. run 'profile get ${tracePath}' to list metrics.`);
  return { json: { [field]: m[field] }, compact: true, text: pyStr(m[field], field) };
}
