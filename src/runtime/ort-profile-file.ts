/**
 * Where a profiling ORT session left its file. ORT names it `<prefix>_<YYYY-MM-DD_HH-MM-SS_mmm>.json`
 * and its endProfiling() returns nothing in JS, so the file is found by that pattern.
 */
import { readdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The file ORT wrote for `prefix`, or null if it wrote none. */
export async function findOrtFile(prefix: string): Promise<string | null> {
  const re = new RegExp(`^${escapeRe(basename(prefix))}_\\d{4}-\\d{2}-\\d{2}_\\d{2}-\\d{2}-\\d{2}_\\d{3}\\.json$`);
  const names = (await readdir(dirname(prefix)).catch(() => [] as string[])).filter((n) => re.test(n)).sort();
  return names.length ? join(dirname(prefix), names[names.length - 1]!) : null;
}
