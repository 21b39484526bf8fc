/**
 * Loads a LibreYOLO checkpoint (.pt or .safetensors) file into a flat state dict plus metadata
 * (parsing in checkpoint-bytes.ts); saves .pt checkpoints atomically.
 */

import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../util/fs.ts';
import { LibreYOLOError } from '../errors.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { PyOrderedDict, type PyWritable } from './pickle/index.ts';
import { normalizeNames, parseCheckpoint, type CheckpointMetadata, type LoadedCheckpoint } from './checkpoint-bytes.ts';
import { writeTorchCheckpoint } from './torch-checkpoint.ts';

export { normalizeNames, parseCheckpoint, type CheckpointMetadata, type LoadedCheckpoint } from './checkpoint-bytes.ts';

export async function loadCheckpointFile(path: string, env: NodeJS.ProcessEnv = process.env): Promise<LoadedCheckpoint> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new LibreYOLOError('model_not_found', `Model weights file not found: ${path}`, { cause });
    if (code === 'EISDIR') throw new LibreYOLOError('model_load_failed', `Cannot load ${path}: it is a folder, not a weights file. Pass a .pt, .safetensors or .onnx file (or a published name such as LibreYOLO9t.pt).`, { cause });
    throw new LibreYOLOError('io_error', `Cannot read ${path}: ${(cause as Error).message}`, { cause });
  }
  return parseCheckpoint(bytes, path, env);
}

/**
 * Writes a .pt checkpoint shaped like the original's: `model` (an OrderedDict state dict) followed by
 * the metadata entries. The file appears atomically: written to a temp file beside it, then renamed.
 */
export async function saveCheckpointPt(path: string, stateDict: Map<string, HostTensor>, metadata: CheckpointMetadata = {}): Promise<void> {
  const top: Record<string, PyWritable> = { model: new PyOrderedDict(stateDict) };
  for (const [k, v] of Object.entries(metadata)) {
    if (v === undefined || k === 'model') continue;
    if (k === 'names') {
      const names = normalizeNames(v);
      if (!names) throw new TypeError('metadata.names must be a dict {int: str} or a list of str');
      top.names = new Map(Object.entries(names).map(([i, n]) => [Number(i), n]));
    } else {
      top[k] = v as PyWritable;
    }
  }
  const bytes = writeTorchCheckpoint(top);
  try {
    await writeFileAtomic(path, bytes);
  } catch (cause) {
    throw new LibreYOLOError('io_error', `Cannot write checkpoint ${path}: ${(cause as Error).message}`, { cause });
  }
}
