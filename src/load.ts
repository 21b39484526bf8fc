/**
 * `LibreYOLO(weights, options)`: resolves a name or path (downloading published weights into
 * ./weights/ when needed), reads a `.pt`, `.safetensors` or exported `.onnx`, recognises the family
 * and size, and returns a ready model whose sessions live in a worker thread.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { DEFAULT_MODEL } from './assets.ts';
import { LibreYOLOError } from './errors.ts';
import { parseNames } from './export/metadata.ts';
import { summarizeModel } from './graph/onnx.ts';
import { LibreYOLOModel } from './model.ts';
import { detectFamily, getFamily, listFamilies, type ModelFamily } from './models/registry.ts';
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
  /** Where HF_ENDPOINT, HF_HUB_OFFLINE, HF_TOKEN and HF_HOME are read (default process.env). */
  env?: NodeJS.ProcessEnv;
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

/** The first few keys of a state dict, for messages about files we cannot place. */
function sampleKeys(sd: Map<string, unknown>): string {
  const keys = [...sd.keys()];
  if (keys.length === 0) return 'it holds no tensors';
  return `its keys start ${keys.slice(0, 3).join(', ')}${keys.length > 3 ? `, ... (${keys.length} in all)` : ''}`;
}

async function loadCheckpointModel(path: string, options: LoadOptions): Promise<LibreYOLOModel> {
  const ckpt = await loadCheckpointFile(path);
  const meta = ckpt.metadata;
  let family: ModelFamily;
  try {
    family = detectFamily(ckpt.stateDict, meta.model_family);
  } catch (err) {
    if (!(err instanceof LibreYOLOError)) throw err;
    const advice = 'Pass a LibreYOLO checkpoint (a state_dict with keys like backbone.conv0.conv.weight), or an official name such as LibreYOLO9t.pt.';
    throw new LibreYOLOError('model_load_failed',
      `Cannot load ${path}: its weights match no supported model family (${listFamilies().map((f) => f.name).join(', ')}); ${sampleKeys(ckpt.stateDict)}. ${advice}`,
      { cause: err, suggestion: advice });
  }
  if (meta.model_family && meta.model_family !== family.name) {
    throw new LibreYOLOError('model_family_mismatch', `${path} says model_family '${meta.model_family}', but its weights are a ${family.name} network.`);
  }
  const task = options.task ?? meta.task ?? 'detect';
  if (task !== 'detect') throw new LibreYOLOError('config_unsupported', `Task '${task}' is not supported yet: this package runs detection models only.`);
  const size = meta.size ?? family.detectSize(ckpt.stateDict) ?? options.size ?? parseWeightName(path)?.size;
  if (!size || !family.sizes.includes(size)) {
    const what = size ? `its size '${size}' is not one of ${family.sizes.join(', ')}` : `its layer widths match none of the sizes ${family.sizes.join(', ')}`;
    const advice = 'Re-download the weights or re-save them from the original model; from the API, LibreYOLO(path, { size }) names the size when the file does not.';
    throw new LibreYOLOError('model_load_failed', `Cannot load ${path}: it looks like a ${family.name} checkpoint, but ${what}. ${advice}`, { suggestion: advice });
  }
  let network;
  try {
    network = family.create({ size, stateDict: ckpt.stateDict });
  } catch (err) {
    if (!(err instanceof LibreYOLOError)) throw err;
    // The family says what did not fit; add which file and what to do about it.
    const advice = 'Re-download the weights or re-save them from the original model.';
    throw new LibreYOLOError(err.code, `Cannot load ${path} as ${family.name}-${size}: ${err.message} ${advice}`, { cause: err, suggestion: advice });
  }
  return new LibreYOLOModel({
    family, size, task,
    names: namesFromMetadata(meta.names, network.nc),
    imgsz: family.inputSizes?.[size] ? squareOrPair(family.inputSizes[size], family.defaultImgsz) : squareOrPair(meta.imgsz, family.defaultImgsz),
    weightsPath: path,
    format: ckpt.format,
    network,
    engine: new GraphEngine(network, { device: parseDevice(options.device), ...(options.threads ? { threads: options.threads } : {}) }),
    metadata: meta,
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

/** Anchor count of a stride-8/16/32 head (YOLOv9's) on an `h x w` input. */
const anchorsFor = (h: number, w: number): number => [8, 16, 32].reduce((a, s) => a + Math.ceil(h / s) * Math.ceil(w / s), 0);

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
  const familyName = md.get('model_family') ?? 'yolo9';
  let family: ModelFamily;
  try {
    family = getFamily(familyName);
  } catch {
    family = getFamily('yolo9');
  }
  const [h, w] = [input.shape[2], input.shape[3]];
  const staticHW = typeof h === 'number' && typeof w === 'number';
  const imgsz: [number, number] = staticHW ? [h, w] : [Number(md.get('imgsz_h') ?? md.get('imgsz') ?? family.defaultImgsz), Number(md.get('imgsz_w') ?? md.get('imgsz') ?? family.defaultImgsz)];
  const dynamic = input.shape.some((d) => typeof d !== 'number');
  const engine = new OnnxFileEngine(bytes, input.dtype === 'float16' ? 'float16' : 'float32', dynamic, { device: parseDevice(options.device), ...(options.threads ? { threads: options.threads } : {}) });

  let nc = Number(md.get('nc'));
  if (!md.has('model_family') || !Number.isInteger(nc) || nc < 1) {
    // No LibreYOLO metadata: torch exports often leave the output's dims symbolic, so run one blank
    // image and check the shape that comes out (the session is reused by predict).
    try {
      nc = await probeClassCount(engine, path, io, typeof input.shape[0] === 'number' ? input.shape[0] : 1, imgsz);
    } catch (err) {
      await engine.close();
      throw err;
    }
    (options.warn ?? ((m: string) => process.emitWarning(m)))(`${path} has no LibreYOLO metadata; assuming a ${family.name}-style detector with ${nc} classes (names class0..class${nc - 1}).`);
  }
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
    engine,
    metadata: Object.fromEntries(md),
    precision,
    ...(options.warn ? { warn: options.warn } : {}),
  });
}

/** Class count from the output of a blank batch, or a clear error if it is not [B, 4+nc, anchors]. */
async function probeClassCount(engine: OnnxFileEngine, path: string, io: string, batch: number, [h, w]: [number, number]): Promise<number> {
  const what = `a blank ${batch}x3x${h}x${w} input`;
  let dims: number[];
  try {
    dims = (await engine.forward({ dtype: 'float32', dims: [batch, 3, h, w], data: new Float32Array(batch * 3 * h * w) })).output.dims;
  } catch (err) {
    throw new LibreYOLOError('model_load_failed',
      `ONNX Runtime cannot run ${path} on ${what}: ${(err as Error).message}. Check that the file is a complete detector export.`, { cause: err });
  }
  const anchors = anchorsFor(h, w);
  if (dims.length === 3 && dims[0] === batch && dims[2] === anchors && dims[1]! > 4) return dims[1]! - 4;
  const transposed = dims.length === 3 && dims[1] === anchors ? ' (anchors before channels: that transposed layout is not supported)' : '';
  throw notDetector(path, `${io}; ${what} gives output ${shapeText(dims)}, expected [${batch},4+nc,${anchors}]${transposed}`, false);
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
