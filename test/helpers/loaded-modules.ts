/**
 * Which of the package's modules a fresh Node process loads for one import: the import runs in a
 * child with a module hook that logs every module it loads (a child, so nothing this process already
 * loaded counts).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/** The src/ modules (paths relative to src/, sorted) that importing `entry` (a path from the repository root) loads. */
export function loadedSrcModules(entry: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'libreyolo-modules-'));
  const log = join(dir, 'loaded.txt');
  try {
    execFileSync(process.execPath, [
      '--import', 'tsx', '--import', pathToFileURL(join(ROOT, 'test/helpers/loaded-modules-register.mjs')).href,
      '--input-type=module', '-e', `await import(${JSON.stringify(pathToFileURL(join(ROOT, entry)).href)});`,
    ], { cwd: ROOT, env: { ...process.env, LOADED_MODULES_LOG: log }, stdio: ['ignore', 'ignore', 'inherit'] });
    const src = join(ROOT, 'src');
    const urls = readFileSync(log, 'utf8').split('\n').filter((u) => u.startsWith('file:'));
    const files = new Set(urls.map((u) => fileURLToPath(u)).filter((f) => f.startsWith(src + '/')).map((f) => relative(src, f)));
    return [...files].sort();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
