/**
 * Exported `.onnx` detectors: the file's metadata read and checked, its family recognised (named in
 * the metadata, or from its output layout), and the engine that runs it; the bytes come from the
 * caller (a file in Node, a fetch or File in the browser).
 */
import { LibreYOLOError } from '../errors.ts';
import { summarizeModel } from '../graph/onnx.ts';
import { defaultNamesText, familyEngineOptions, namesOrDefault, type ModelIdentity } from '../models/from-checkpoint.ts';
import { familyImgsz, getFamily, listFamilies, type ModelFamily, type OnnxRecognition } from '../models/index.ts';
import { canonicalTask, resolveTask } from '../models/tasks.ts';
import { limit } from '../util/limits.ts';
import type { Warn } from '../util/warn.ts';
import { checkCount, checkNames, checkToken, metadataError, raiseWith, shown } from '../weights/model-metadata.ts';
import { parseDevice } from './device.ts';
import { OnnxFileEngine } from './graph-engine.ts';

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

export interface OnnxModelOptions {
  device?: string | number;
  threads?: number;
  /** Where the no-metadata notice goes (default process.emitWarning). */
  warn?: Warn;
}

/** What an exported file is, with the engine that runs it (its session is created on first forward, or by the probe). */
export interface OnnxModel extends ModelIdentity {
  engine: OnnxFileEngine;
  /** The input's height and width are static in the file: only `imgsz` runs. */
  fixedInput: boolean;
  metadata: Record<string, string>;
  precision: 'fp16' | 'fp32';
}

/**
 * Opens an exported `.onnx` from its bytes: reads its LibreYOLO metadata (or, without it, recognises
 * the family from the output of a blank input), checks every field it uses, and gives the engine.
 * Shared by Node's and the browser's LibreYOLO(); `path` names the file in messages.
 */
export async function openOnnxModel(bytes: Uint8Array, path: string, options: OnnxModelOptions): Promise<OnnxModel> {
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
  return {
    family,
    size: mdSize ?? 'unknown',
    task,
    names: namesOrDefault(names, nc),
    imgsz,
    fixedInput: staticHW,
    engine,
    metadata: Object.fromEntries(md),
    precision,
  };
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

