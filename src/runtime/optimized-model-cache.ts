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
 * Folder: `ort-optimized/` under the cache root (util/disk-cache.ts). LIBREYOLO_ORT_CACHE=0 turns
 * the cache off.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { arch, cpus } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { cacheRoot, cachesEnabled, evictOldest, tempEntryPath, touchEntry } from '../util/disk-cache.ts';
import { limit } from '../util/limits.ts';
import type { SessionConfig } from './protocol.ts';
import { WorkerSession, type SessionTransport } from './worker-session.ts';

/** Whether a session came from the cache (`hit`), filled it (`miss`) or bypassed it (`off`). */
export type CacheOutcome = 'hit' | 'miss' | 'off';

export function optimizedModelCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheRoot(env), 'ort-optimized');
}

function cacheable(model: Uint8Array | string, config: SessionConfig): model is Uint8Array {
  if (!cachesEnabled() || typeof model === 'string') return false;
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
      touchEntry(path);
      return { session, cache: 'hit' };
    } catch {
      rmSync(path, { force: true });
    }
  }
  const tmp = tempEntryPath(path);
  try {
    // ORT warns that an NCHWc graph suits only this machine: the key says so already.
    const logSeverityLevel = config.logSeverityLevel ?? (process.env.LIBREYOLO_DEBUG ? 2 : 3);
    const session = await WorkerSession.create(host, key, model, { ...config, logSeverityLevel, optimizedModelFilePath: tmp, configEntries: { ...config.configEntries, 'session.save_model_format': 'ORT' } });
    try {
      renameSync(tmp, path);
      evictOldest(dir, limit('ortCacheBytes'), name, [ENTRY_SUFFIX, OLD_SUFFIX]);
    } catch {
      // A full or read-only disk costs the next run its head start, nothing else.
    }
    return { session, cache: 'miss' };
  } finally {
    rmSync(tmp, { force: true });
  }
}
