/**
 * Official weight names: which family and size a published file name is, and its Hugging Face URL.
 * No I/O, so the browser build resolves the same names to the same URLs.
 */
import { familySizes, listFamilies, type ModelFamily } from './index.ts';
import { TASK_SUFFIXES } from './tasks.ts';

export const DEFAULT_ENDPOINT = 'https://huggingface.co';
export interface WeightName {
  /** The registered family whose `filenamePrefix` the name starts with. */
  family: string;
  size: string;
  /** '' for detect, else one of the family's task suffixes ('-seg', ...). */
  taskSuffix: string;
  /** Canonical repository and file stem, e.g. 'LibreYOLO9t-seg'. */
  stem: string;
}

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function taskSuffixes(f: ModelFamily): readonly string[] {
  return f.weightTaskSuffixes ?? [''];
}

/**
 * Parses an official weight file name (case-insensitive search, as the original) against every
 * registered family's `filenamePrefix`, sizes and task suffixes.
 */
export function parseWeightName(fileName: string): WeightName | null {
  for (const f of listFamilies()) {
    const suffixes = taskSuffixes(f).filter((t) => t !== '');
    const re = new RegExp(`${escapeRe(f.filenamePrefix)}(${[...f.sizes].sort((a, b) => b.length - a.length).map(escapeRe).join('|')})(${suffixes.map(escapeRe).join('|')})?\\.pt`, 'i');
    const m = re.exec(fileName);
    if (!m) continue;
    const size = m[1]!.toLowerCase();
    const taskSuffix = (m[2] ?? '').toLowerCase();
    return { family: f.name, size, taskSuffix, stem: `${f.filenamePrefix}${size}${taskSuffix}` };
  }
  return null;
}

export function weightsUrl(stem: string, endpoint: string = DEFAULT_ENDPOINT): string {
  return `${endpoint.replace(/\/+$/, '')}/LibreYOLO/${stem}/resolve/main/${stem}.pt`;
}

export function knownWeightNames(): string[] {
  return listFamilies().flatMap((f) => taskSuffixes(f).flatMap((t) => familySizes(f, t === '' ? 'detect' : TASK_SUFFIXES[t] ?? t).map((s) => `${f.filenamePrefix}${s}${t}.pt`)));
}
