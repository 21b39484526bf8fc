/**
 * A LibreYOLO checkpoint (.pt or .safetensors) from bytes: a flat state dict plus metadata, the
 * weights picked the way the original does. No file access, so the browser build reads the same way.
 */

import { LibreYOLOError } from '../errors.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { isHostTensor, TorchDtype, type PyValue } from './pickle/index.ts';
import { readSafetensors } from './safetensors.ts';
import { checkCount, checkNames, checkNamesCover, checkToken } from './model-metadata.ts';
import { readTorchCheckpoint } from './torch-checkpoint.ts';

export interface CheckpointMetadata {
  model_family?: string;
  size?: string;
  task?: string;
  nc?: number;
  names?: Record<number, string>;
  imgsz?: number;
  [key: string]: unknown;
}

export interface LoadedCheckpoint {
  stateDict: Map<string, HostTensor>;
  metadata: CheckpointMetadata;
  format: 'pt' | 'safetensors';
  /** Notes about the file that did not stop it loading (none at present: bad metadata is an error). */
  warnings: string[];
}

/** Where the original looks for weights, in order; `ema.module` is checked before these. */
const WEIGHT_KEYS = ['ema', 'ema_net', 'net', 'model', 'state_dict'];
/** Top-level entries that hold weights or optimizer state, never metadata. */
const NON_METADATA_KEYS = new Set([...WEIGHT_KEYS, 'train_model', 'optimizer']);

/** A checkpoint from bytes already in memory; `path` names it in messages (its extension picks safetensors). */
export function parseCheckpoint(bytes: Uint8Array, path: string, env: NodeJS.ProcessEnv = process.env): LoadedCheckpoint {
  const warnings: string[] = [];
  if (isSafetensors(bytes, path)) {
    const st = readSafetensors(bytes, path);
    return { stateDict: fixKeys(st.tensors), metadata: metadataFromStrings(st.metadata, path), format: 'safetensors', warnings };
  }
  const top = readTorchCheckpoint(bytes, path, env);
  if (!(top instanceof Map)) throw new LibreYOLOError('model_load_failed', `Cannot load ${path}: it holds no dict of weights.`);
  const { weights, itself } = pickWeights(top);
  const raw = new Map<string, PyValue>();
  for (const [k, v] of top) {
    if (typeof k !== 'string' || containsTensor(v)) continue;
    if (!itself && NON_METADATA_KEYS.has(k)) continue;
    raw.set(k, v);
  }
  const stateDict = new Map<string, HostTensor>();
  for (const [k, v] of weights) if (typeof k === 'string' && isHostTensor(v)) stateDict.set(k, v);
  return { stateDict: fixKeys(stateDict), metadata: typedMetadata(raw, path), format: 'pt', warnings };
}

function isSafetensors(bytes: Uint8Array, path: string): boolean {
  if (path.toLowerCase().endsWith('.safetensors')) return true;
  if (bytes[0] === 0x50 && bytes[1] === 0x4b) return false; // zip
  return bytes.length > 9 && bytes[8] === 0x7b; // '{' right after the length
}

function pickWeights(top: Map<PyValue, PyValue>): { weights: Map<PyValue, PyValue>; itself: boolean } {
  const ema = top.get('ema');
  if (ema instanceof Map && ema.get('module') instanceof Map) return { weights: ema.get('module') as Map<PyValue, PyValue>, itself: false };
  for (const k of WEIGHT_KEYS) {
    const v = top.get(k);
    if (v instanceof Map) return { weights: v, itself: false };
  }
  return { weights: top, itself: true };
}

/** Legacy `detect.` head prefix becomes `head.`; the fixed DFL projection is rebuilt, never loaded. */
function fixKeys(sd: Map<string, HostTensor>): Map<string, HostTensor> {
  const out = new Map<string, HostTensor>();
  for (const [k, v] of sd) {
    const key = k.startsWith('detect.') ? `head.${k.slice('detect.'.length)}` : k;
    if (key === 'head.dfl' || key.startsWith('head.dfl.')) continue;
    out.set(key, v);
  }
  return out;
}

/**
 * Pickles can share (and even cycle through) memoised containers and nest them arbitrarily deep, so
 * walks over metadata are bounded: a crafted file must not turn a few bytes into an exponential
 * expansion or a stack overflow.
 */
const MAX_METADATA_NODES = 1_000_000;
const MAX_METADATA_DEPTH = 100;

/** Iterative, so a list nested a million deep is just a long loop. */
function containsTensor(root: unknown): boolean {
  const seen = new Set<unknown>();
  const todo = [root];
  while (todo.length > 0) {
    const v = todo.pop();
    if (isHostTensor(v)) return true;
    if (!(v instanceof Map || Array.isArray(v)) || seen.has(v)) continue;
    seen.add(v);
    for (const x of v instanceof Map ? v.values() : v) todo.push(x);
  }
  return false;
}

/** Python values to JSON-like JS: dicts to objects (keys as strings), sets to arrays, dtypes to names. */
function toPlain(v: PyValue, budget: { left: number; path: string }, ancestors = new Set<unknown>()): unknown {
  if (--budget.left < 0) throw new LibreYOLOError('model_load_failed', `Cannot load ${budget.path}: its metadata is too large or too deeply shared to decode.`);
  if (ancestors.size > MAX_METADATA_DEPTH) {
    throw new LibreYOLOError('model_load_failed', `Cannot load ${budget.path}: its metadata nests containers more than ${MAX_METADATA_DEPTH} levels deep, which no checkpoint needs; the file is damaged or crafted.`);
  }
  if (!(v instanceof Map || v instanceof Set || Array.isArray(v))) return v instanceof TorchDtype ? v.name : v;
  if (ancestors.has(v)) throw new LibreYOLOError('model_load_failed', `Cannot load ${budget.path}: its metadata contains a cycle.`);
  ancestors.add(v);
  const out = v instanceof Map
    ? Object.fromEntries([...v].map(([k, x]) => [String(k), toPlain(x, budget, ancestors)]))
    : [...v].map((x) => toPlain(x, budget, ancestors));
  ancestors.delete(v);
  return out;
}

/** names as Record<number, string>, from a dict with int (or numeric string) keys or from a list. */
export function normalizeNames(v: unknown): Record<number, string> | undefined {
  let pairs: [unknown, unknown][];
  if (v instanceof Map) pairs = [...v.entries()];
  else if (Array.isArray(v)) pairs = v.map((x, i) => [i, x]);
  else if (typeof v === 'object' && v !== null && !isHostTensor(v)) pairs = Object.entries(v);
  else return undefined;
  const out: Record<number, string> = {};
  for (const [k, name] of pairs) {
    const i = typeof k === 'number' ? k : typeof k === 'bigint' ? Number(k) : typeof k === 'string' && /^\d+$/.test(k) ? Number(k) : NaN;
    if (!Number.isSafeInteger(i) || i < 0 || typeof name !== 'string') return undefined;
    out[i] = name;
  }
  return out;
}

/** The fields the package uses are validated (model-metadata.ts); the rest are kept as plain values. None means absent. */
function typedMetadata(raw: Map<string, PyValue>, path: string): CheckpointMetadata {
  const meta: CheckpointMetadata = {};
  const budget = { left: MAX_METADATA_NODES, path };
  for (const [k, v] of raw) {
    if (v === null && (KNOWN_FIELDS as readonly string[]).includes(k)) continue;
    switch (k) {
      case 'model_family': case 'size': case 'task':
        meta[k] = checkToken(v, k, path);
        break;
      case 'nc':
        meta.nc = checkCount(v, k, path, 'classes');
        break;
      case 'imgsz':
        meta.imgsz = checkCount(v, k, path, 'imgsz');
        break;
      case 'names':
        meta.names = checkNames(v, path);
        break;
      default:
        meta[k] = toPlain(v, budget);
    }
  }
  if (meta.names && meta.nc !== undefined) checkNamesCover(meta.names, meta.nc, path);
  return meta;
}

const KNOWN_FIELDS = ['model_family', 'size', 'task', 'nc', 'imgsz', 'names'] as const;

/** safetensors metadata is str -> str: nc and imgsz are decimal text, names is JSON text. */
function metadataFromStrings(md: Record<string, string>, path: string): CheckpointMetadata {
  return typedMetadata(new Map(Object.entries(md)), path);
}
