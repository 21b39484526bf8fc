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
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { arch, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { toBinary } from '@bufbuild/protobuf';
import { ModelProtoSchema } from 'onnx-buf';
import * as ort from 'onnxruntime-node';
import type { Graph } from '../graph/ir.ts';
import { parseModel } from '../graph/onnx.ts';
import { orderLike } from '../graph/passes/exec-order.ts';
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

function entryName(model: Uint8Array, config: SessionConfig, reordered = false): string {
  const h = createHash('sha256');
  h.update(JSON.stringify({ level: config.graphOptimizationLevel, providers: config.executionProviders, ort: ort.env.versions.node ?? ort.env.versions.common, cpu: cpus()[0]?.model ?? '', arch: arch(), ...(reordered ? { order: 'reference' } : {}) }));
  h.update(model);
  return `${h.digest('hex').slice(0, 32)}${ENTRY_SUFFIX}`;
}

/** ORT's log level for cache sessions: it warns that an NCHWc graph suits only this machine, which the key says already. */
const quietLevel = (config: SessionConfig): NonNullable<SessionConfig['logSeverityLevel']> => config.logSeverityLevel ?? (process.env.LIBREYOLO_DEBUG ? 2 : 3);

/** Session options that make ORT save the graph it runs to `savePath` in its own format (none without a path). */
const saveTo = (config: SessionConfig, savePath: string | null): Partial<SessionConfig> =>
  savePath ? { optimizedModelFilePath: savePath, configEntries: { ...config.configEntries, 'session.save_model_format': 'ORT' } } : {};

/**
 * `optimized` (an ONNX model ORT optimised and saved) with its nodes in `orderLike(reference)`'s
 * order: loaded, its node indices follow `reference`'s execution order, and so does ORT's.
 */
export function reorderOptimizedModel(optimized: Uint8Array, reference: Graph): Uint8Array {
  const m = parseModel(optimized);
  const nodes = m.graph?.node ?? [];
  const order = orderLike(nodes.map((n) => ({ name: n.name, inputs: n.input, outputs: n.output })), reference);
  m.graph!.node = order.map((k) => nodes[k]!);
  return toBinary(ModelProtoSchema, m);
}

/**
 * ORT's optimisation of `model`, reordered like `reference` (reorderOptimizedModel), opened with
 * optimisation off; saved to `savePath` in ORT's format when given. ORT runs a graph in a
 * depth-first order over its node indices (graph/passes/exec-order.ts), and its optimiser gives the
 * nodes it fuses new indices after all others, which sent a train step's order far from the one it
 * was built for: the forward's recomputed values made long before the backward read them.
 */
async function createReordered(host: SessionTransport, key: string, model: Uint8Array, config: SessionConfig, reference: Graph, savePath: string | null): Promise<WorkerSession> {
  try {
    return await reopenReordered(host, key, model, config, reference, savePath);
  } catch (err) {
    // A graph ORT cannot save, or not reload, as ONNX still trains, in ORT's own order.
    if (process.env.LIBREYOLO_DEBUG) console.error(`optimized-model-cache: reordering ${key} failed, ORT's order kept: ${String(err)}`);
    return WorkerSession.create(host, key, model, { ...config, logSeverityLevel: quietLevel(config), ...saveTo(config, savePath) });
  }
}

async function reopenReordered(host: SessionTransport, key: string, model: Uint8Array, config: SessionConfig, reference: Graph, savePath: string | null): Promise<WorkerSession> {
  const dir = mkdtempSync(join(tmpdir(), 'libreyolo-order-'));
  try {
    const optimizedPath = join(dir, 'optimized.onnx');
    const { profileFilePrefix: _profile, ...quiet } = config;
    const first = await WorkerSession.create(host, key, model, { ...quiet, logSeverityLevel: quietLevel(config), optimizedModelFilePath: optimizedPath });
    await first.release();
    const reordered = reorderOptimizedModel(readFileSync(optimizedPath), reference);
    return await WorkerSession.create(host, key, reordered, {
      ...config, graphOptimizationLevel: 'disabled', ...saveTo(config, savePath),
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Opens a session on `model`, through the cache when the session allows it: a hit loads the saved
 * optimised graph with optimisation off (the same graph, so the same numbers), a miss optimises as
 * usual and saves the result. With `orderLike` (the IR `model` was serialised from; CPU, optimised
 * sessions), ORT's optimised graph is reordered to run in that graph's execution order first
 * (createReordered), and that is what the cache keeps.
 */
export async function createCachedSession(host: SessionTransport, key: string, model: Uint8Array | string, config: SessionConfig, orderLike?: Graph): Promise<{ session: WorkerSession; cache: CacheOutcome }> {
  const reorder = orderLike && config.graphOptimizationLevel !== 'disabled'
    && config.executionProviders.every((ep) => (typeof ep === 'string' ? ep : ep.name) === 'cpu') ? orderLike : null;
  if (!cacheable(model, config)) {
    if (reorder && typeof model !== 'string') return { session: await createReordered(host, key, model, config, reorder, null), cache: 'off' };
    return { session: await WorkerSession.create(host, key, model, config), cache: 'off' };
  }
  const dir = optimizedModelCacheDir();
  try {
    mkdirSync(dir, { recursive: true });
  } catch {
    return { session: reorder ? await createReordered(host, key, model, config, reorder, null) : await WorkerSession.create(host, key, model, config), cache: 'off' };
  }
  const name = entryName(model, config, reorder !== null);
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
    const session = reorder
      ? await createReordered(host, key, model, config, reorder, tmp)
      : await WorkerSession.create(host, key, model, { ...config, logSeverityLevel: quietLevel(config), ...saveTo(config, tmp) });
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
