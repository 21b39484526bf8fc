/**
 * The check registry, in the original's order. `--skip` / `--only` select by full id or by family
 * prefix (`images` matches `images.corrupt`); a selector matching nothing is refused so a typo
 * never passes a dataset silently.
 */
import { LibreYOLOError } from '../../errors.ts';
import { BALANCE_CHECKS } from './balance.ts';
import { CONFIG_CHECKS } from './config.ts';
import { FILES_CHECKS } from './files.ts';
import { IMAGES_CHECKS } from './images.ts';
import { LABELS_CHECKS } from './labels.ts';
import type { Check } from './types.ts';

export type { Check } from './types.ts';

export const CHECKS: readonly Check[] = [...BALANCE_CHECKS, ...CONFIG_CHECKS, ...FILES_CHECKS, ...IMAGES_CHECKS, ...LABELS_CHECKS];

const matches = (id: string, selector: string): boolean => id === selector || id.startsWith(`${selector}.`);

export interface Selection { selected: Check[]; skipped: string[] }

/** Resolves the selectors (and --fast) into the checks to run and the ids skipped, sorted. */
export function selectChecks(skip: readonly string[], only: readonly string[], fast: boolean): Selection {
  const clean = (list: readonly string[]): string[] => list.map((s) => s.trim()).filter(Boolean);
  const sk = clean(skip), on = clean(only);
  for (const sel of [...sk, ...on]) {
    if (!CHECKS.some((c) => matches(c.id, sel))) {
      const families = [...new Set(CHECKS.map((c) => c.id.split('.')[0]!))].sort();
      throw new LibreYOLOError('config_unknown_key', `Unknown check '${sel}'. Use a check id or family: ${families.join(', ')}.`);
    }
  }
  const selected: Check[] = [];
  const skipped: string[] = [];
  for (const c of CHECKS) {
    const wanted = on.length === 0 || on.some((s) => matches(c.id, s));
    if (wanted && !sk.some((s) => matches(c.id, s)) && !(fast && c.scan)) selected.push(c);
    else skipped.push(c.id);
  }
  if (selected.length === 0) throw new LibreYOLOError('config_unknown_key', 'The --skip/--only/--fast combination leaves no checks to run.');
  return { selected, skipped: skipped.sort() };
}
