/**
 * `LibreYOLO(weights, options)`: resolves a name or path (downloading published weights into
 * ./weights/ when needed), reads a `.pt`, `.safetensors` or exported `.onnx`, recognises the family
 * and size, and returns a ready model whose sessions live in a worker thread.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { DEFAULT_MODEL } from './assets.ts';
import { LibreYOLOError } from './errors.ts';
import { LibreYOLOModel } from './model.ts';
import { familyImgsz, familyTasks, getFamily, listFamilies, trainingHooks } from './models/index.ts';
import { parseDevice } from './runtime/device.ts';
import { THREADS } from './runtime/threads.ts';
import { GraphEngine } from './runtime/graph-engine.ts';
import { openOnnxModel } from './runtime/onnx-model.ts';
import { loadCheckpointFile } from './weights/checkpoint.ts';
import { familyEngineOptions, modelFromCheckpoint, namesOrDefault } from './models/from-checkpoint.ts';
import { resolveWeights, type ResolveWeightsOptions } from './models/hub.ts';
import type { Warn } from './util/warn.ts';

export interface LoadOptions {
  /** `cpu` (default), `0` / `cuda:0`, `webgpu`. */
  device?: string | number;
  /** ORT intra-op threads (default: all cores). */
  threads?: number;
  /** Size override when it cannot be read from the file. */
  size?: string;
  /** `detect` or `segment` (aliases `seg`, `segmentation`) where the family runs it; default: what the file says. */
  task?: string;
  /** Download published weights when missing (default true). */
  download?: boolean;
  /** Directory that relative paths and ./weights/ are resolved against (default cwd). */
  cwd?: string;
  /** Where warnings go (default process.emitWarning). */
  warn?: Warn;
  /** Print download progress on stderr (default true). */
  progress?: boolean;
  /** Where HF_ENDPOINT, HF_HUB_OFFLINE, HF_TOKEN and HF_HOME are read (default process.env). */
  env?: NodeJS.ProcessEnv;
}

async function loadCheckpointModel(path: string, options: LoadOptions): Promise<LibreYOLOModel> {
  const ckpt = await loadCheckpointFile(path);
  const m = modelFromCheckpoint(ckpt, path, options);
  return new LibreYOLOModel({
    ...m,
    weightsPath: path,
    format: ckpt.format,
    engine: new GraphEngine(m.network, { device: parseDevice(options.device), ...(options.threads ? { threads: options.threads } : {}), ...familyEngineOptions(m.family) }),
    ...(options.warn ? { warn: options.warn } : {}),
  });
}

async function loadOnnxModel(path: string, options: LoadOptions): Promise<LibreYOLOModel> {
  const m = await openOnnxModel(new Uint8Array(await readFile(path)), path, options);
  return new LibreYOLOModel({ ...m, weightsPath: path, format: 'onnx', network: null, ...(options.warn ? { warn: options.warn } : {}) });
}

/**
 * A model with fresh (seeded) weights, as training from scratch starts: `name` is a family and size
 * (`yolo9t`, `yolo9-t`, `yoloxn`); `nc` classes (80 by default; the dataset's class count replaces it
 * when training starts).
 */
export function createFreshModel(name: string, options: { nc?: number; device?: string | number; seed?: number; threads?: number; task?: string } = {}): LibreYOLOModel {
  const parsed = parseFreshName(name);
  if (!parsed) {
    throw new LibreYOLOError('model_load_failed', `'${name}' names no family and size; fresh models are one of ${listFamilies().map((f) => f.sizes.map((s) => `${f.name}${s}`).join(', ')).join('; ')}.`);
  }
  const family = getFamily(parsed.family);
  const size = parsed.size;
  const nc = options.nc ?? 80;
  // `yolo9t-seg` (or task: 'segment'): the family's network for that task.
  const task = options.task ?? parsed.task ?? 'detect';
  if (!familyTasks(family).includes(task)) {
    throw new LibreYOLOError('config_unsupported', `Task '${task}' is not supported by ${family.displayName}: it runs ${familyTasks(family).join(', ')}.`);
  }
  const network = family.create({ size, nc, task });
  if (options.seed) trainingHooks(family).initialize(network, options.seed);
  const names = namesOrDefault(undefined, nc);
  const side = familyImgsz(family, size);
  return new LibreYOLOModel({
    family, size, task, names, imgsz: [side, side], weightsPath: null, format: 'fresh', network,
    engine: new GraphEngine(network, { device: parseDevice(options.device), ...(options.threads ? { threads: options.threads } : {}), ...familyEngineOptions(family) }),
  });
}

/** `yolo9t`, `yolo9-t`, `yoloxn`: a registered family name and one of its sizes (fresh weights), else null. */
export function parseFreshName(name: string): { family: string; size: string; task?: string } | null {
  let lower = name.trim().toLowerCase();
  // A `-seg` suffix (`yolo9t-seg`) asks for the segment network, as in the published names.
  const seg = lower.endsWith('-seg') && familyOfFresh(lower.slice(0, -4)) !== null;
  if (seg) lower = lower.slice(0, -4);
  const found = familyOfFresh(lower);
  return found && seg ? { ...found, task: 'segment' } : found;
}

function familyOfFresh(lower: string): { family: string; size: string } | null {
  for (const f of listFamilies()) {
    for (const size of f.sizes) {
      if (lower === `${f.name}${size}` || lower === `${f.name}-${size}`) return { family: f.name, size };
    }
  }
  return null;
}

/**
 * What `train`/`profile run` start from: a family+size name (`yolo9t`, `yoloxn`) means fresh weights
 * unless a file of that name exists; anything else loads like `LibreYOLO()`.
 */
export async function loadForTraining(weights: string, options: LoadOptions = {}): Promise<LibreYOLOModel> {
  const fresh = parseFreshName(weights);
  if (fresh && !existsSync(resolve(options.cwd ?? process.cwd(), weights))) {
    return createFreshModel(weights, {
      ...(options.device !== undefined ? { device: options.device } : {}), ...(options.threads ? { threads: options.threads } : {}),
    });
  }
  return LibreYOLO(weights, options);
}


/**
 * Loads a detector. `weights` is a local path, a published name (`LibreYOLO9t.pt`, `LibreYOLO9t`,
 * `LibreYOLO/LibreYOLO9t`; downloaded into ./weights/), or an exported `.onnx`. Without it, the
 * bundled `LibreYOLO9t-shapes.pt` (trained on synthetic shapes; docs/default-model.md) is loaded.
 */
export async function LibreYOLO(weights: string = DEFAULT_MODEL, options: LoadOptions = {}): Promise<LibreYOLOModel> {
  if (typeof weights !== 'string' || weights.trim() === '') {
    throw new LibreYOLOError('model_not_found', 'LibreYOLO() needs weights: a file path or a published name such as LibreYOLO9t.pt.');
  }
  parseDevice(options.device); // reject a bad device before any download
  if (options.threads !== undefined) THREADS.check('threads', options.threads);
  const resolveOpts: ResolveWeightsOptions = {
    ...(options.download === false ? { allowDownload: false } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.progress === false ? { progress: false } : {}),
    ...(options.env ? { env: options.env } : {}),
  };
  const path = await resolveWeights(weights, resolveOpts);
  return extname(path).toLowerCase() === '.onnx' ? loadOnnxModel(path, options) : loadCheckpointModel(path, options);
}
