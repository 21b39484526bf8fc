/** What `libreyolo metadata` does once its flags are parsed (imported only when it runs). */
import { readFile, stat } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { LibreYOLOError } from '../../errors.ts';
import { summarizeModel } from '../../graph/onnx.ts';
import { numel } from '../../graph/tensor.ts';
import { loadCheckpointFile } from '../../weights/checkpoint.ts';
import { CliExit } from '../report.ts';
import { printResult, type OutputFlags } from '../output.ts';

/** The keys a LibreYOLO checkpoint or export declares, listed first. */
export const REQUIRED_METADATA_KEYS = ['schema_version', 'libreyolo_version', 'model_family', 'size', 'task', 'nc', 'names', 'imgsz'] as const;

export interface MetadataFlags extends OutputFlags {
  path?: string;
}

interface MetadataReport {
  path: string;
  format: 'pt' | 'safetensors' | 'onnx';
  valid: boolean;
  errors: string[];
  metadata: Record<string, unknown>;
  /** Tensors and parameter count (checkpoints), or graph inputs, outputs and opset (ONNX). */
  contents: Record<string, unknown>;
}

/** ONNX metadata values are strings; the JSON-looking ones (names, supported_tasks) are shown parsed. */
function parsedValue(v: string): unknown {
  if (/^[[{]/.test(v)) {
    try {
      return JSON.parse(v.replace(/'/g, '"'));
    } catch {
      return v;
    }
  }
  return v;
}

async function readOnnx(path: string): Promise<Omit<MetadataReport, 'valid' | 'errors' | 'path'>> {
  const bytes = await readFile(path);
  let s: ReturnType<typeof summarizeModel>;
  try {
    s = summarizeModel(bytes);
  } catch (err) {
    throw new LibreYOLOError('model_load_failed', `Cannot read ${path} as an ONNX model: ${(err as Error).message}. The file is truncated or not ONNX.`, { cause: err });
  }
  const io = (v: { name: string; dtype: string; shape: unknown[] }): Record<string, unknown> => ({ name: v.name, dtype: v.dtype, shape: v.shape });
  return {
    format: 'onnx',
    metadata: Object.fromEntries([...s.metadata].map(([k, v]) => [k, parsedValue(v)])),
    contents: { opset: s.opset, inputs: s.inputs.map(io), outputs: s.outputs.map(io) },
  };
}

export async function readModelMetadata(path: string): Promise<MetadataReport> {
  const errors: string[] = [];
  let read: Omit<MetadataReport, 'valid' | 'errors' | 'path'>;
  if (extname(path).toLowerCase() === '.onnx') read = await readOnnx(path);
  else {
    try {
      const ckpt = await loadCheckpointFile(path);
      let params = 0;
      for (const t of ckpt.stateDict.values()) params += numel(t.dims);
      read = { format: ckpt.format, metadata: { ...ckpt.metadata }, contents: { tensors: ckpt.stateDict.size, values: params } };
    } catch (err) {
      // Metadata that fails LibreYOLO's checks is this command's answer, not a crash.
      if (!(err instanceof LibreYOLOError) || err.code !== 'model_metadata_invalid') throw err;
      errors.push(err.message);
      read = { format: extname(path).toLowerCase() === '.safetensors' ? 'safetensors' : 'pt', metadata: {}, contents: {} };
    }
  }
  if (errors.length === 0) for (const k of REQUIRED_METADATA_KEYS) if (!(k in read.metadata)) errors.push(`missing required key '${k}'`);
  const ordered: Record<string, unknown> = {};
  for (const k of REQUIRED_METADATA_KEYS) if (k in read.metadata) ordered[k] = read.metadata[k];
  for (const [k, v] of Object.entries(read.metadata)) if (!(k in ordered)) ordered[k] = v;
  return { path, format: read.format, valid: errors.length === 0, errors, metadata: ordered, contents: read.contents };
}

const shownValue = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

function humanMetadata(r: MetadataReport): string {
  const lines = [`Checkpoint: ${r.path}`, `Format: ${r.format}`, `Valid LibreYOLO metadata: ${r.valid ? 'yes' : 'no'}`, 'Metadata:'];
  const entries = Object.entries(r.metadata);
  if (entries.length === 0) lines.push('  (none)');
  for (const [k, v] of entries) lines.push(`  ${k}: ${shownValue(v)}`);
  lines.push('Contents:');
  for (const [k, v] of Object.entries(r.contents)) lines.push(`  ${k}: ${shownValue(v)}`);
  if (r.errors.length) lines.push('Errors:', ...r.errors.map((e) => `  - ${e}`));
  return lines.join('\n');
}

export async function runMetadata(positional: string | undefined, flags: MetadataFlags): Promise<void> {
  if (positional !== undefined && flags.path !== undefined && positional !== flags.path) {
    throw new LibreYOLOError('config_conflict', `Two paths given: '${positional}' and path=${flags.path}. Pass one.`);
  }
  const given = flags.path ?? positional;
  if (!given) throw new LibreYOLOError('config_required_key', 'metadata: path is required: libreyolo metadata --path <checkpoint.pt | model.onnx>.');
  const path = resolve(given);
  const st = await stat(path).catch(() => null);
  if (!st) throw new LibreYOLOError('checkpoint_not_found', `Checkpoint not found: ${given}. Pass the path of a .pt, .safetensors or exported .onnx file.`);
  if (!st.isFile()) throw new LibreYOLOError('model_load_failed', `Cannot read ${given}: it is not a regular file. Pass a .pt, .safetensors or exported .onnx file.`);
  const r = await readModelMetadata(path);
  printResult({ ...r }, flags, () => humanMetadata(r));
  if (!r.valid) throw new CliExit(1);
}
