/**
 * ORT's optimised form of a graph, kept on disk between processes. Optimising a training graph is
 * most of the cost of opening its session (yolo9t at 96 px, 20k nodes: about 13 s of 17 at level
 * 'all', 4.5 s loading the saved optimised graph with optimisation off), and the graph of a family,
 * size and input shape is the same from run to run because weights are inputs, not initialisers.
 *
 * The key covers everything the optimised graph depends on: the graph's bytes, the level, the
 * providers, ORT's version and the CPU (level 'all' rewrites convolutions into the NCHWc blocks of
 * this CPU's vector width). Entries are written to a temporary name and renamed, so a reader never
 * sees half a file; an entry ORT cannot load is deleted and rebuilt; the oldest entries go when the
 * folder passes its size limit. CPU sessions only: other providers' fused nodes are untested here.
 *
 * Entries are in ORT's own format (`.ort`, flatbuffers with the kernels already resolved), which
 * loads in about half the time of the same graph saved as ONNX (yolo9t train graph, b2/96: 2.4 s
 * against 4.7 s; the graph as built, unoptimised, takes 3.3 s), so a hit also beats skipping
 * optimisation altogether.
 *
 * Folder: LIBREYOLO_CACHE_DIR, else $XDG_CACHE_HOME/libreyolo, else ~/.cache/libreyolo, then
 * `ort-optimized/`. LIBREYOLO_ORT_CACHE=0 turns the cache off.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs';
import { arch, cpus, homedir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { limit } from '../util/limits.ts';
import type { SessionConfig } from './protocol.ts';
import { WorkerSession, type SessionTransport } from './worker-session.ts';

/** Whether a session came from the cache (`hit`), filled it (`miss`) or bypassed it (`off`). */
export type CacheOutcome = 'hit' | 'miss' | 'off';

export function optimizedModelCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const root = env.LIBREYOLO_CACHE_DIR || (env.XDG_CACHE_HOME ? join(env.XDG_CACHE_HOME, 'libreyolo') : join(homedir(), '.cache', 'libreyolo'));
  return join(root, 'ort-optimized');
}

function cacheable(model: Uint8Array | string, config: SessionConfig): model is Uint8Array {
  if (process.env.LIBREYOLO_ORT_CACHE === '0' || typeof model === 'string') return false;
  if (config.graphOptimizationLevel === 'disabled') return false;
  return config.executionProviders.every((ep) => (typeof ep === 'string' ? ep : ep.name) === 'cpu');
}

/** ORT's flatbuffer format; ORT's version in the key covers a change of that format. */
const ENTRY_SUFFIX = '.ort';
/** Entries of earlier releases, saved as ONNX: never read, but counted and evicted like the others. */
const OLD_SUFFIX = '.onnx';

function entryName(model: Uint8Array, config: SessionConfig): string {
  const h = createHash('sha256');
  h.update(JSON.stringify({ level: config.graphOptimizationLevel, providers: config.executionProviders, ort: ort.env.versions.node ?? ort.env.versions.common, cpu: cpus()[0]?.model ?? '', arch: arch() }));
  h.update(model);
  return `${h.digest('hex').slice(0, 32)}${ENTRY_SUFFIX}`;
}

/**
 * Deletes a crashed writer's day-old leftovers and the least recently used entries until the folder
 * fits its limit; `keep`, the entry just written, stays even when it alone passes the limit.
 */
function evict(dir: string, keep: string): void {
  const files = readdirSync(dir);
  for (const f of files.filter((name) => name.endsWith('.tmp'))) {
    const s = statSync(join(dir, f), { throwIfNoEntry: false });
    if (s && Date.now() - s.mtimeMs > 24 * 3600_000) rmSync(join(dir, f), { force: true });
  }
  const entries = files.filter((f) => f.endsWith(ENTRY_SUFFIX) || f.endsWith(OLD_SUFFIX)).map((f) => {
    const s = statSync(join(dir, f), { throwIfNoEntry: false });
    return { f, size: s?.size ?? 0, used: s?.mtimeMs ?? 0 };
  });
  let total = entries.reduce((sum, e) => sum + e.size, 0);
  for (const e of entries.sort((a, b) => a.used - b.used)) {
    if (total <= limit('ortCacheBytes')) break;
    if (e.f === keep) continue;
    rmSync(join(dir, e.f), { force: true });
    total -= e.size;
  }
}

/**
 * Opens a session on `model`, through the cache when the session allows it: a hit loads the saved
 * optimised graph with optimisation off (the same graph, so the same numbers), a miss optimises as
 * usual and saves the result.
 */
export async function createCachedSession(host: SessionTransport, key: string, model: Uint8Array | string, config: SessionConfig): Promise<{ session: WorkerSession; cache: CacheOutcome }> {
  if (!cacheable(model, config)) return { session: await WorkerSession.create(host, key, model, config), cache: 'off' };
  const dir = optimizedModelCacheDir();
  try {
    mkdirSync(dir, { recursive: true });
  } catch {
    return { session: await WorkerSession.create(host, key, model, config), cache: 'off' };
  }
  const name = entryName(model, config);
  const path = join(dir, name);
  if (statSync(path, { throwIfNoEntry: false })) {
    try {
      const session = await WorkerSession.create(host, key, path, { ...config, graphOptimizationLevel: 'disabled', configEntries: { ...config.configEntries, 'session.load_model_format': 'ORT' } });
      const now = new Date();
      utimesSync(path, now, now);
      return { session, cache: 'hit' };
    } catch {
      rmSync(path, { force: true });
    }
  }
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    // ORT warns that an NCHWc graph suits only this machine: the key says so already.
    const logSeverityLevel = config.logSeverityLevel ?? (process.env.LIBREYOLO_DEBUG ? 2 : 3);
    const session = await WorkerSession.create(host, key, model, { ...config, logSeverityLevel, optimizedModelFilePath: tmp, configEntries: { ...config.configEntries, 'session.save_model_format': 'ORT' } });
    try {
      renameSync(tmp, path);
      evict(dir, name);
    } catch {
      // A full or read-only disk costs the next run its head start, nothing else.
    }
    return { session, cache: 'miss' };
  } finally {
    rmSync(tmp, { force: true });
  }
}
