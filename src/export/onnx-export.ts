/**
 * `model.export({format: 'onnx'})`: the original's contract (input `images` [B,3,H,W], output
 * `output` [B,4+nc,A], opset 13 by default, string metadata) from the IR inference graph.
 * `dynamic` frees batch, height and width (anchors are then computed in-graph).
 */
import { EXPORT_FORMATS, findExportFormat } from './formats.ts';
import { checkOutputFolder, writeFileAtomic, writeUnique } from '../util/fs.ts';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { ASSETS_DIR } from '../assets.ts';
import { LibreYOLOError } from '../errors.ts';
import { serializeModel } from '../graph/onnx.ts';
import { convertPrecision } from '../graph/passes/precision.ts';
import { keepFloatRegion } from '../runtime/engine.ts';
import { buildExportGraph } from '../runtime/graph-engine.ts';
import { VERSION } from '../version.ts';
import { exportMetadata } from './metadata.ts';
import type { DetectionNetwork, ModelFamily } from '../models/registry.ts';
import type { SessionEngine } from '../runtime/engine.ts';
import { resolveExportOptions } from './options.ts';
import { defaultWarn, type Warn } from '../util/warn.ts';
import { normalizeImgsz } from '../util/imgsz.ts';
import { checkFamilyImgsz, familyImgszStride } from '../models/registry.ts';

/** What export reads of a model (the `LibreYOLOModel` facade is one). */
export interface ExportSource {
  readonly family: ModelFamily;
  readonly size: string;
  readonly task: string;
  readonly names: Record<number, string>;
  readonly imgsz: [number, number];
  /** The graph to export; null for a model loaded from an exported .onnx (refused). */
  readonly network: DetectionNetwork | null;
  /** `fp32`, or the quantize recipe the model runs (exported as it runs). */
  readonly precision: 'fp32' | 'fp16' | 'bf16';
  readonly weightsPath: string | null;
  /** Converts the graph as the model's quantized sessions do. */
  readonly engine: Pick<SessionEngine, 'convertGraph'>;
}

export interface ExportOptions {
  format: 'onnx' | string;
  /** Input size (square side or [h, w]); default the model's. */
  imgsz?: number | [number, number];
  /** Static batch size (ignored when dynamic). Default 1. */
  batch?: number;
  /** Free batch, height and width. Default false. */
  dynamic?: boolean;
  /**
   * float16 weights, compute, input and outputs (the original's fp16 ONNX). Reloads through
   * `LibreYOLO()`, which casts float32 inputs to the declared float16 type.
   */
  half?: boolean;
  /** ONNX opset. Default (and minimum) 13 as the original, or the family's `exportOpset` (RF-DETR 17). */
  opset?: number;
  /**
   * Output file; default next to the weights as `<stem>.onnx` (`<stem>_fp16.onnx` with half,
   * `<stem>_<recipe>_quant.onnx` quantized). An existing file is never replaced: the export then goes
   * to `<stem>2.onnx`, `<stem>3.onnx`, ... (`<stem>_fp16-2.onnx` after a digit; with a warning), and
   * the path returned says where.
   */
  output_path?: string;
  /** Replace an existing file at the output path (written to a temporary name, then renamed). Default false. */
  overwrite?: boolean;
}

/**
 * One naming rule for reduced-precision files: `_`-joined tags after the stem. `_fp16`: a half export
 * (float16 inputs and outputs); `_<recipe>_quant` (`_fp16_quant`, `_bf16_quant`): a quantized model
 * (float32 inputs and outputs), so the two never take each other's name.
 */
export function precisionSuffix(half: boolean, recipe: string | null): string {
  if (half) return '_fp16';
  return recipe ? `_${recipe}_quant` : '';
}

/**
 * `<stem><suffix>.onnx` next to the weights (the suffix from `precisionSuffix`); for the weights
 * bundled in the package's assets/, `weights/<stem><suffix>.onnx` under the working directory
 * instead, so exports never write into the installed package.
 */
export function defaultExportPath(model: Pick<ExportSource, 'weightsPath' | 'family' | 'size'>, suffix = ''): string {
  if (model.weightsPath) {
    const stem = basename(model.weightsPath, extname(model.weightsPath));
    const bundled = resolve(dirname(model.weightsPath)) === resolve(ASSETS_DIR);
    return join(bundled ? 'weights' : dirname(model.weightsPath), `${stem}${suffix}.onnx`);
  }
  return join('weights', `${model.family.name}_${model.size}${suffix}.onnx`);
}

export async function exportOnnx(model: ExportSource, options: ExportOptions, warn: Warn = defaultWarn): Promise<string> {
  const o = resolveExportOptions(options as unknown as Record<string, unknown>, model.family);
  if (findExportFormat(o.format)?.name !== 'onnx') {
    throw new LibreYOLOError('export_format_unknown', `Unknown or unsupported export format '${o.format}'. This package exports ${EXPORT_FORMATS.map((f) => `'${f.name}'`).join(', ')}.`);
  }
  if (!model.network) {
    throw new LibreYOLOError('format_precision_unsupported', 'This model was loaded from an exported ONNX file; export from the original .pt or .safetensors weights instead.');
  }
  const { opset, batch, dynamic, half } = o;
  const imgsz = normalizeImgsz(o.imgsz, familyImgszStride(model.family, model.size, model.task)) ?? model.imgsz;
  checkFamilyImgsz(model.family, imgsz);
  const freeSize = dynamic && !model.family.staticExportSize;
  const graph = buildExportGraph(model.network, { batch: dynamic ? null : batch, height: freeSize ? null : imgsz[0], width: freeSize ? null : imgsz[1] });
  // A quantized model exports what it runs: half inside, float32 at the boundary.
  const recipe = model.precision === 'fp32' ? null : model.precision;
  if (half && recipe) {
    throw new LibreYOLOError('config_conflict', `This model is already quantized to ${recipe}; export it without half=true (it keeps float32 inputs and outputs), or call dequantize() first.`);
  }
  const region = keepFloatRegion(model.family.quantize?.keepFloat);
  if (half) convertPrecision(graph, { dtype: 'float16', keepIO: false, ...(region ? { region } : {}) });
  else if (recipe) await model.engine.convertGraph(graph, opset);
  graph.name = `${model.family.name}_${model.size}`;
  graph.metadata = exportMetadata({
    version: VERSION, family: model.family.name, size: model.size, task: model.task, names: model.names,
    imgsz, dynamic, precision: half ? 'fp16' : recipe ?? 'fp32', ...(recipe ? { quantRecipe: recipe } : {}),
    ...(model.family.exportOwnTaskOnly ? { ownTaskOnly: true } : {}),
  });
  const wanted = resolve(o.outputPath ?? defaultExportPath(model, precisionSuffix(half, recipe)));
  checkOutputFolder('output_path', dirname(wanted));
  if (o.overwrite) {
    await writeFileAtomic(wanted, serializeModel(graph, { opset, producerVersion: VERSION }));
    return wanted;
  }
  // Without overwrite an existing file is kept: the export goes to the next free name (`<stem>2.onnx`, ...).
  const ext = extname(wanted);
  const path = await writeUnique(dirname(wanted), basename(wanted, ext), ext.replace(/^\./, ''), serializeModel(graph, { opset, producerVersion: VERSION }));
  if (path !== wanted) warn(`${wanted} already exists and was kept; exported to ${path} instead (pass overwrite=true to replace it, or another output_path).`);
  return path;
}
