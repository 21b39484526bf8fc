/** Paths to the shared parity fixtures; a missing fixture fails the test loudly (never a skip). */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const FIXTURES_DIR = resolve(REPO_ROOT, '../shared/fixtures');

export function fixture(name: string): string {
  const p = join(FIXTURES_DIR, name);
  if (!existsSync(p)) {
    throw new Error(`Missing reference fixture ${p}: these tests need the shared fixtures folder beside the checkout (../shared/fixtures), as CI provides it.`);
  }
  return p;
}
