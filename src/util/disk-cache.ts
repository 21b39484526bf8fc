/**
 * What the on-disk caches share (ORT-optimised graphs, runtime/optimized-model-cache.ts; ORT's
 * inferred shapes, graph/autodiff/shapes.ts): one root folder, entries written under a temporary
 * name and renamed (a reader never sees half a file), and least-recently-used eviction to a size
 * limit. Root: LIBREYOLO_CACHE_DIR, else $XDG_CACHE_HOME/libreyolo, else ~/.cache/libreyolo.
 * LIBREYOLO_ORT_CACHE=0 turns every cache off (both hold what ORT computed).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return env.LIBREYOLO_CACHE_DIR || (env.XDG_CACHE_HOME ? join(env.XDG_CACHE_HOME, 'libreyolo') : join(homedir(), '.cache', 'libreyolo'));
}

export function cachesEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.LIBREYOLO_ORT_CACHE !== '0';
}

/** A temporary name beside `path`, unique to this process and call; rename it to `path` when complete. */
export function tempEntryPath(path: string): string {
  return `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
}

/** Writes `data` to `path` through a temporary name; false when the disk refused (a cache only loses its head start). */
export function writeEntry(path: string, data: string | Uint8Array): boolean {
  const tmp = tempEntryPath(path);
  try {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(tmp, data);
    renameSync(tmp, path);
    return true;
  } catch {
    rmSync(tmp, { force: true });
    return false;
  }
}

/** Marks an entry as just used (its mtime orders eviction). */
export function touchEntry(path: string): void {
  const now = new Date();
  try {
    utimesSync(path, now, now);
  } catch {
    // A read-only cache still serves hits.
  }
}

/**
 * Deletes a crashed writer's day-old `.tmp` leftovers, then the least recently used entries (files
 * ending in one of `suffixes`) until the folder fits `limitBytes`; `keep`, the entry just written,
 * stays even when it alone passes the limit.
 */
export function evictOldest(dir: string, limitBytes: number, keep: string, suffixes: readonly string[]): void {
  const files = readdirSync(dir);
  for (const f of files.filter((name) => name.endsWith('.tmp'))) {
    const s = statSync(join(dir, f), { throwIfNoEntry: false });
    if (s && Date.now() - s.mtimeMs > 24 * 3600_000) rmSync(join(dir, f), { force: true });
  }
  const entries = files.filter((f) => suffixes.some((s) => f.endsWith(s))).map((f) => {
    const s = statSync(join(dir, f), { throwIfNoEntry: false });
    return { f, size: s?.size ?? 0, used: s?.mtimeMs ?? 0 };
  });
  let total = entries.reduce((sum, e) => sum + e.size, 0);
  for (const e of entries.sort((a, b) => a.used - b.used)) {
    if (total <= limitBytes) break;
    if (e.f === keep) continue;
    rmSync(join(dir, e.f), { force: true });
    total -= e.size;
  }
}
