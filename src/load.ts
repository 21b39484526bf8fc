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
import { summarizeModel } from './graph/onnx.ts';
import { LibreYOLOModel } from './model.ts';
import { familyImgsz, getFamily, listFamilies, trainingHooks, type ModelFamily, type OnnxRecognition } from './models/index.ts';
import { parseDevice } from './runtime/device.ts';
import { GraphEngine, OnnxFileEngine } from './runtime/graph-engine.ts';
import { loadCheckpointFile } from './weights/checkpoint.ts';
import { defaultNamesText, familyEngineOptions, modelFromCheckpoint, namesOrDefault } from './models/from-checkpoint.ts';
import { checkCount, checkNames, checkToken, metadataError, raiseWith, shown } from './weights/model-metadata.ts';
import { limit } from './util/limits.ts';
import { canonicalTask, resolveTask } from './models/tasks.ts';
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

const shapeText = (shape: readonly (number | string)[]): string => `[${shape.join(',')}]`;

function notDetector(path: string, found: string, hasMetadata: boolean): LibreYOLOError {
  const advice = "Export the detector with 'libreyolo export model=<weights> format=onnx', or pass its .pt weights.";
  const why = hasMetadata ? "has a layout that is not a detector's" : "has no LibreYOLO metadata and its layout is not a detector's";
  return new LibreYOLOError('model_load_failed',
    `${path} ${why}: ${found}. ` +
      `Expected input [B,3,H,W] and output [B,4+nc,anchors] (x1,y1,x2,y2 in input pixels, then class scores). ${advice}`,
    { suggestion: advice });
}

/**
 * Static input sides are allocated as given (the probe, the letterbox), so they are held to the same
 * limit as imgsz; a static batch counts too: a probe allocates batch x 3 x H x W floats.
 */
function checkInputSize(path: string, io: string, shape: readonly (number | string)[]): void {
  const max = limit('imgsz');
  const [b, , h, w] = shape;
  for (const side of [h, w]) {
    if (typeof side === 'number' && side > max) {
      throw new LibreYOLOError('model_load_failed',
        `Cannot load ${path}: its input is ${io}, with a side of ${side} pixels, over the limit of ${max} (${raiseWith('imgsz')}). Re-export the model at a smaller imgsz.`);
    }
  }
  const pixels = (typeof b === 'number' ? b : 1) * (typeof h === 'number' ? h : 1) * (typeof w === 'number' ? w : 1);
  if (pixels > max * max) {
    throw new LibreYOLOError('model_load_failed',
      `Cannot load ${path}: its input is ${io}, ${pixels} pixels per run, over the limit of ${max}x${max} (${raiseWith('imgsz')}). Re-export it with a dynamic or smaller batch.`);
  }
}

async function loadOnnxModel(path: string, options: LoadOptions): Promise<LibreYOLOModel> {
  const bytes = new Uint8Array(await readFile(path));
  let summary;
  try {
    summary = summarizeModel(bytes);
  } catch (err) {
    throw new LibreYOLOError('model_load_failed', `Cannot read ${path} as an ONNX model: ${(err as Error).message}. The file is truncated or not ONNX; re-export or re-download it.`, { cause: err });
  }
  const md = summary.metadata;
  const input = summary.inputs[0];
  const output = summary.outputs.find((o) => o.name === 'output') ?? summary.outputs[0];
  const io = `input ${input ? `${input.name} ${shapeText(input.shape)}` : '(none)'}, output ${output ? `${output.name} ${shapeText(output.shape)}` : '(none)'}`;
  if (!input || input.shape.length !== 4 || (typeof input.shape[1] === 'number' && input.shape[1] !== 3) || output?.shape.length !== 3) throw notDetector(path, io, md.has('model_family'));
  checkInputSize(path, io, input.shape);
  // Every field used below is checked first: they size arrays and name folders.
  const field = (k: string) => (md.has(k) ? md.get(k) : undefined);
  const token = (k: string) => (md.has(k) ? checkToken(md.get(k), k, path) : undefined);
  const count = (k: string, cap: 'imgsz' | 'classes') => (md.has(k) ? checkCount(md.get(k), k, path, cap) : undefined);
  const familyName = token('model_family');
  // A LibreYOLO export names its family; a file without one is recognised by its output layout below.
  let family: ModelFamily | null = null;
  if (familyName !== undefined) {
    try {
      family = getFamily(familyName);
    } catch {
      throw metadataError(path, 'model_family', `is ${shown(familyName)}, which is not one of ${listFamilies().map((f) => f.name).join(', ')}`);
    }
  }
  const mdSize = token('size') ?? token('model_size');
  const mdTask = token('task');
  const mdImgsz = count('imgsz', 'imgsz');
  const mdH = count('imgsz_h', 'imgsz') ?? mdImgsz;
  const mdW = count('imgsz_w', 'imgsz') ?? mdImgsz;
  const [h, w] = [input.shape[2], input.shape[3]];
  const staticHW = typeof h === 'number' && typeof w === 'number';
  const fallbackSide = family ? familyImgsz(family, mdSize ?? '', mdTask === undefined ? undefined : canonicalTask(mdTask)) : 640;
  const imgsz: [number, number] = staticHW ? [h, w] : [mdH ?? fallbackSide, mdW ?? fallbackSide];
  const dynamic = input.shape.some((d) => typeof d !== 'number');
  let nc = count('nc', 'classes') ?? NaN;
  // The default [B, 4+nc, anchors] layout says its class count; families with their own layout (own
  // candidates, or an export layout converted back) decode their own.
  const columns = !family || family.candidates || family.onnx?.toPredictLayout ? undefined : output.shape[1];
  if (typeof columns === 'number' && Number.isInteger(nc) && columns !== nc + 4) {
    throw metadataError(path, 'nc', `is ${nc}, but the output ${output.name} ${shapeText(output.shape)} has ${columns - 4} class columns`);
  }
  let names = md.has('names') && Number.isInteger(nc) ? checkNames(field('names'), path, nc) : undefined;

  const engineFor = (f: ModelFamily | null): OnnxFileEngine => new OnnxFileEngine(bytes, input.dtype === 'float16' ? 'float16' : 'float32', dynamic,
    { device: parseDevice(options.device), ...(options.threads ? { threads: options.threads } : {}), ...(f ? familyEngineOptions(f) : {}) }, f?.onnx?.toPredictLayout?.bind(f.onnx));
  let engine = engineFor(family);
  const declaredNc = Number.isInteger(nc) ? nc : undefined;
  if (family === null || declaredNc === undefined) {
    // No LibreYOLO metadata: torch exports often leave the output's dims symbolic, so run one blank
    // image and ask the families whose export layout the shape that comes out is (the session is
    // reused by predict).
    try {
      const probed = await probeFamily(engine, path, io, output.name, typeof input.shape[0] === 'number' ? input.shape[0] : 1, imgsz, family);
      nc = probed.nc;
      if (declaredNc !== undefined && declaredNc !== nc) throw metadataError(path, 'nc', `is ${declaredNc}, but the model outputs ${nc} class columns`);
      if (md.has('names')) names = checkNames(field('names'), path, nc);
      if (family === null) {
        family = probed.family;
        if (family.onnx?.toPredictLayout) {
          await engine.close();
          engine = engineFor(family);
        }
      }
    } catch (err) {
      await engine.close();
      throw err;
    }
    if (!md.has('model_family')) {
      (options.warn ?? ((m: string) => process.emitWarning(m)))(`${path} has no LibreYOLO metadata; assuming a ${family.name}-style detector with ${nc} classes (${names ? 'names from its metadata' : defaultNamesText(nc)}).`);
    }
  }
  const task = onnxTask(path, family, mdTask, summary.outputs.map((o) => o.name));
  const precision = input.dtype === 'float16' || md.get('precision') === 'fp16' ? 'fp16' : 'fp32';
  return new LibreYOLOModel({
    family,
    size: mdSize ?? 'unknown',
    task,
    names: namesOrDefault(names, nc),
    imgsz,
    weightsPath: path,
    format: 'onnx',
    network: null,
    engine,
    metadata: Object.fromEntries(md),
    precision,
    ...(options.warn ? { warn: options.warn } : {}),
  });
}

/**
 * The task of an exported file (its `task` metadata, default detect): one its family runs, and for
 * segment a file that has the family's mask outputs after the box output.
 */
function onnxTask(path: string, family: ModelFamily, declared: string | undefined, outputNames: readonly string[]): string {
  const task = resolveTask(family, { declared, path: '', keys: [] });
  if (task === 'segment') {
    const want = family.segment?.maskOutputs ?? [];
    const missing = want.filter((n) => !outputNames.includes(n));
    // The box output(s) first (one, or the export pair a family converts back), then the mask outputs.
    const boxOutputs = family.onnx?.toPredictLayout ? outputNames.length - want.length : 1;
    if (missing.length || boxOutputs < 1 || outputNames.length !== want.length + boxOutputs) {
      throw metadataError(path, 'task', `is 'segment', but its outputs are ${outputNames.join(', ')}; a ${family.name} segment export has a box output then ${want.join(', ')}`);
    }
  }
  return task;
}

/**
 * The family and class count of a file from the output of a blank batch: the named family's layout,
 * or the first registered family that recognises it; else a clear error.
 */
async function probeFamily(engine: OnnxFileEngine, path: string, io: string, outputName: string, batch: number, [h, w]: [number, number], named: ModelFamily | null): Promise<{ family: ModelFamily; nc: number }> {
  const what = `a blank ${batch}x3x${h}x${w} input`;
  let dims: number[];
  let outputs: Record<string, number[]>;
  try {
    const r = await engine.forwardRaw({ dtype: 'float32', dims: [batch, 3, h, w], data: new Float32Array(batch * 3 * h * w) });
    dims = r.output.dims;
    outputs = { [outputName]: dims, ...Object.fromEntries(Object.entries(r.extra).map(([k, t]) => [k, t.dims])) };
  } catch (err) {
    throw new LibreYOLOError('model_load_failed',
      `ONNX Runtime cannot run ${path} on ${what}: ${(err as Error).message}. Check that the file is a complete detector export.`, { cause: err });
  }
  const candidates = named ? [named] : listFamilies();
  for (const family of candidates) {
    const recognise: OnnxRecognition | undefined = family.onnx;
    const nc = dims[0] === batch ? recognise?.classCount(dims, [h, w], outputs) ?? null : null;
    if (nc !== null && nc >= 1) return { family, nc };
  }
  const layouts = candidates.filter((f) => f.onnx).map((f) => `${f.onnx!.layout(batch, [h, w])} (${f.name})`).join(' or ');
  throw notDetector(path, `${io}; ${what} gives output ${shapeText(dims)}, expected ${layouts}`, false);
}

/**
 * A model with fresh (seeded) weights, as training from scratch starts: `name` is a family and size
 * (`yolo9t`, `yolo9-t`, `yoloxn`); `nc` classes (80 by default; the dataset's class count replaces it
 * when training starts).
 */
export function createFreshModel(name: string, options: { nc?: number; device?: string | number; seed?: number; threads?: number } = {}): LibreYOLOModel {
  const parsed = parseFreshName(name);
  if (!parsed) {
    throw new LibreYOLOError('model_load_failed', `'${name}' names no family and size; fresh models are one of ${listFamilies().map((f) => f.sizes.map((s) => `${f.name}${s}`).join(', ')).join('; ')}.`);
  }
  const family = getFamily(parsed.family);
  const size = parsed.size;
  const nc = options.nc ?? 80;
  const network = family.create({ size, nc });
  if (options.seed) trainingHooks(family).initialize(network, options.seed);
  const names = namesOrDefault(undefined, nc);
  const side = familyImgsz(family, size);
  return new LibreYOLOModel({
    family, size, task: 'detect', names, imgsz: [side, side], weightsPath: null, format: 'fresh', network,
    engine: new GraphEngine(network, { device: parseDevice(options.device), ...(options.threads ? { threads: options.threads } : {}), ...familyEngineOptions(family) }),
  });
}

/** `yolo9t`, `yolo9-t`, `yoloxn`: a registered family name and one of its sizes (fresh weights), else null. */
export function parseFreshName(name: string): { family: string; size: string } | null {
  const lower = name.trim().toLowerCase();
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
  const { threads } = options;
  if (threads !== undefined && !(typeof threads === 'number' && Number.isInteger(threads) && threads >= 1)) {
    throw new LibreYOLOError('config_range_error', `threads must be a positive integer (ONNX Runtime intra-op threads), got ${String(threads)}`);
  }
  const resolveOpts: ResolveWeightsOptions = {
    ...(options.download === false ? { allowDownload: false } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.progress === false ? { progress: false } : {}),
    ...(options.env ? { env: options.env } : {}),
  };
  const path = await resolveWeights(weights, resolveOpts);
  return extname(path).toLowerCase() === '.onnx' ? loadOnnxModel(path, options) : loadCheckpointModel(path, options);
}
