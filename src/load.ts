/**
 * `LibreYOLO(weights, options)`: resolves a name or path (downloading published weights into
 * ./weights/ when needed), reads a `.pt`, `.safetensors` or exported `.onnx`, recognises the family
 * and size, and returns a ready model whose sessions live in a worker thread.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { LibreYOLOError } from './errors.ts';
import { parseNames } from './export/metadata.ts';
import { summarizeModel } from './graph/onnx.ts';
import { LibreYOLOModel } from './model.ts';
import { detectFamily, getFamily, type ModelFamily } from './models/registry.ts';
import './models/index.ts';
import { parseDevice } from './runtime/device.ts';
import { GraphEngine, OnnxFileEngine } from './runtime/graph-engine.ts';
import { loadCheckpointFile } from './weights/checkpoint.ts';
import { resolveWeights, type ResolveWeightsOptions } from './weights/hub.ts';
import { parseWeightName } from './weights/hub.ts';
import type { Warn } from './predict/options.ts';

export interface LoadOptions {
  /** `cpu` (default), `0` / `cuda:0`, `webgpu`. */
  device?: string | number;
  /** ORT intra-op threads (default: all cores). */
  threads?: number;
  /** Size override when it cannot be read from the file. */
  size?: string;
  /** Only `detect` is supported. */
  task?: string;
  /** Download published weights when missing (default true). */
  download?: boolean;
  /** Directory that relative paths and ./weights/ are resolved against (default cwd). */
  cwd?: string;
  /** Where warnings go (default process.emitWarning). */
  warn?: Warn;
  /** Print download progress on stderr (default true). */
  progress?: boolean;
}

function namesFromMetadata(names: Record<number, string> | undefined, nc: number): Record<number, string> {
  const out: Record<number, string> = {};
  for (let k = 0; k < nc; k++) out[k] = names?.[k] ?? `class${k}`;
  return out;
}

function squareOrPair(v: unknown, fallback: number): [number, number] {
  const n = typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : fallback;
  return [n, n];
}

async function loadCheckpointModel(path: string, options: LoadOptions): Promise<LibreYOLOModel> {
  const ckpt = await loadCheckpointFile(path);
  const meta = ckpt.metadata;
  const family = detectFamily(ckpt.stateDict, meta.model_family);
  if (meta.model_family && meta.model_family !== family.name) {
    throw new LibreYOLOError('model_family_mismatch', `${path} says model_family '${meta.model_family}', but its weights are a ${family.name} network.`);
  }
  const task = options.task ?? meta.task ?? 'detect';
  if (task !== 'detect') throw new LibreYOLOError('config_unsupported', `Task '${task}' is not supported yet: this package runs detection models only.`);
  const size = meta.size ?? family.detectSize(ckpt.stateDict) ?? options.size ?? parseWeightName(path)?.size;
  if (!size || !family.sizes.includes(size)) {
    throw new LibreYOLOError('model_load_failed', `Could not determine the ${family.name} size of ${path} (its keys match none of ${family.sizes.join(', ')}).`,
      { suggestion: 'Pass { size } explicitly if the file is a valid checkpoint.' });
  }
  const network = family.create({ size, stateDict: ckpt.stateDict });
  return new LibreYOLOModel({
    family, size, task,
    names: namesFromMetadata(meta.names, network.nc),
    imgsz: squareOrPair(meta.imgsz, family.defaultImgsz),
    weightsPath: path,
    format: ckpt.format,
    network,
    engine: new GraphEngine(network, { device: parseDevice(options.device), ...(options.threads ? { threads: options.threads } : {}) }),
    metadata: meta,
    ...(options.warn ? { warn: options.warn } : {}),
  });
}

async function loadOnnxModel(path: string, options: LoadOptions): Promise<LibreYOLOModel> {
  const bytes = new Uint8Array(await readFile(path));
  let summary;
  try {
    summary = summarizeModel(bytes);
  } catch (err) {
    throw new LibreYOLOError('model_load_failed', `Cannot read ${path} as an ONNX model: ${(err as Error).message}. The file is truncated or not ONNX.`, { cause: err });
  }
  const md = summary.metadata;
  const input = summary.inputs[0];
  const output = summary.outputs.find((o) => o.name === 'output') ?? summary.outputs[0];
  // Recognisable layout: one 4-D image input, a [B, 4+nc, anchors] output.
  if (!input || input.shape.length !== 4 || !output || output.shape.length !== 3) {
    throw new LibreYOLOError('model_load_failed',
      `${path} has no LibreYOLO metadata and its layout is not a detector's (expected input [B,3,H,W] and output [B,4+nc,anchors]).`);
  }
  const outChannels = typeof output.shape[1] === 'number' ? output.shape[1] : NaN;
  const nc = Number(md.get('nc') ?? (Number.isFinite(outChannels) ? outChannels - 4 : NaN));
  if (!Number.isInteger(nc) || nc < 1) throw new LibreYOLOError('model_load_failed', `Cannot tell the class count of ${path}: no 'nc' metadata and the output's channel dimension is not fixed.`);
  const familyName = md.get('model_family') ?? 'yolo9';
  let family: ModelFamily;
  try {
    family = getFamily(familyName);
  } catch {
    family = getFamily('yolo9');
  }
  if (!md.has('model_family')) (options.warn ?? ((m: string) => process.emitWarning(m)))(`${path} has no LibreYOLO metadata; assuming a ${family.name}-style detector with ${nc} classes.`);
  const [h, w] = [input.shape[2], input.shape[3]];
  const staticHW = typeof h === 'number' && typeof w === 'number';
  const imgsz: [number, number] = staticHW ? [h, w] : [Number(md.get('imgsz_h') ?? md.get('imgsz') ?? family.defaultImgsz), Number(md.get('imgsz_w') ?? md.get('imgsz') ?? family.defaultImgsz)];
  const dynamic = input.shape.some((d) => typeof d !== 'number');
  const precision = input.dtype === 'float16' || md.get('precision') === 'fp16' ? 'fp16' : 'fp32';
  return new LibreYOLOModel({
    family,
    size: md.get('size') ?? md.get('model_size') ?? 'unknown',
    task: md.get('task') ?? 'detect',
    names: parseNames(md.get('names'), nc),
    imgsz,
    weightsPath: path,
    format: 'onnx',
    network: null,
    engine: new OnnxFileEngine(bytes, input.dtype === 'float16' ? 'float16' : 'float32', dynamic, { device: parseDevice(options.device), ...(options.threads ? { threads: options.threads } : {}) }),
    metadata: Object.fromEntries(md),
    precision,
    ...(options.warn ? { warn: options.warn } : {}),
  });
}

/**
 * Loads a detector. `weights` is a local path, a published name (`LibreYOLO9t.pt`, `LibreYOLO9t`,
 * `LibreYOLO/LibreYOLO9t`; downloaded into ./weights/), or an exported `.onnx`.
 */
export async function LibreYOLO(weights: string, options: LoadOptions = {}): Promise<LibreYOLOModel> {
  if (typeof weights !== 'string' || weights.trim() === '') {
    throw new LibreYOLOError('model_not_found', 'LibreYOLO() needs weights: a file path or a published name such as LibreYOLO9t.pt.');
  }
  parseDevice(options.device); // reject a bad device before any download
  const resolveOpts: ResolveWeightsOptions = {
    ...(options.download === false ? { allowDownload: false } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.progress === false ? { progress: false } : {}),
  };
  const path = await resolveWeights(weights, resolveOpts);
  return extname(path).toLowerCase() === '.onnx' ? loadOnnxModel(path, options) : loadCheckpointModel(path, options);
}
