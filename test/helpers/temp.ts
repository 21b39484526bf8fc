/** Temp folders that tests do not have to remember to remove. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A test or hook context (node:test's TestContext): anything that runs a function when it ends. */
export interface EndsWith {
  after(fn: () => void): unknown;
}

const atExit = new Set<string>();

/**
 * A fresh folder under the OS temp dir. With `t` (a test's context) it is removed when that test
 * ends; without, when the test file's process exits, which suits a file-level or suite-level folder.
 */
export function tempDir(t?: EndsWith): string {
  const dir = mkdtempSync(join(tmpdir(), 'libreyolo-test-'));
  if (t) {
    t.after(() => rmSync(dir, { recursive: true, force: true }));
  } else {
    if (!atExit.size) process.once('exit', () => { for (const d of atExit) rmSync(d, { recursive: true, force: true }); });
    atExit.add(dir);
  }
  return dir;
}
