/**
 * What a parsed checkpoint is: its family, size, task, names, input size and the network built from
 * its weights, with the errors that say why a file is none of ours. Shared by Node's and the
 * browser's LibreYOLO(), which differ only in how they get the bytes and where sessions run.
 */
import { LibreYOLOError } from '../errors.ts';
import { COCO_NAMES } from '../data/coco.ts';
import type { LoadedCheckpoint, CheckpointMetadata } from '../weights/checkpoint-bytes.ts';
import { parseWeightName } from './hub-names.ts';
import { checkNamesCover } from '../weights/model-metadata.ts';
import { checkpointImgsz, detectFamily, familySizes, listFamilies, type DetectionNetwork, type ModelFamily } from './index.ts';
import { canonicalTask, resolveTask } from './tasks.ts';

/** What a loaded file says about its model, whatever its format (checkpoint or exported .onnx). */
export interface ModelIdentity {
  family: ModelFamily;
  size: string;
  task: string;
  names: Record<number, string>;
  /** Default network input `[h, w]`. */
  imgsz: [number, number];
}

export interface CheckpointModel extends ModelIdentity {
  network: DetectionNetwork;
  metadata: CheckpointMetadata;
}

/**
 * The file's names (already checked to cover 0..nc-1); when it has none, the COCO names for 80
 * classes (the original's default for a model of 80 classes), else class0..class<nc-1>.
 */
export function namesOrDefault(names: Record<number, string> | undefined, nc: number): Record<number, string> {
  if (names) return { ...names };
  const out: Record<number, string> = {};
  for (let k = 0; k < nc; k++) out[k] = nc === COCO_NAMES.length ? COCO_NAMES[k]! : `class${k}`;
  return out;
}

export const defaultNamesText = (nc: number): string => (nc === COCO_NAMES.length ? 'the COCO names' : `names class0..class${nc - 1}`);

/** The first few keys of a state dict, for messages about files we cannot place. */
function sampleKeys(sd: Map<string, unknown>): string {
  const keys = [...sd.keys()];
  if (keys.length === 0) return 'it holds no tensors';
  return `its keys start ${keys.slice(0, 3).join(', ')}${keys.length > 3 ? `, ... (${keys.length} in all)` : ''}`;
}

/** Recognises and builds the model in `ckpt`; `path` names the file in messages (and may carry the size in its name). */
export function modelFromCheckpoint(ckpt: LoadedCheckpoint, path: string, options: { task?: string; size?: string }): CheckpointModel {
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
  if (family.checkSource) family = detectFamily(ckpt.stateDict, meta.model_family, path);
  if (meta.model_family && meta.model_family !== family.name) {
    throw new LibreYOLOError('model_family_mismatch', `${path} says model_family '${meta.model_family}', but its weights are a ${family.name} network.`);
  }
  // A task the family does not run is refused first; a supported one must match the file's own.
  const task = resolveTask(family, { explicit: options.task, declared: meta.task, path, keys: [...ckpt.stateDict.keys()] });
  if (meta.task !== undefined && canonicalTask(meta.task) !== task) {
    throw new LibreYOLOError('model_load_failed', family.taskMismatchMessage
      ? `Cannot load ${path}: ${family.taskMismatchMessage(meta.task, task)}`
      : `Failed to load model weights from ${path}: Checkpoint was trained for task='${meta.task}' but this model was initialized for task='${task}'. Pass the matching task or use the correct checkpoint.`);
  }
  const named = parseWeightName(path);
  const size = meta.size ?? family.detectSize(ckpt.stateDict) ?? options.size ?? (named?.family === family.name ? named.size : undefined);
  const sizes = familySizes(family, task);
  if (!size || !sizes.includes(size)) {
    const what = size ? `its size '${size}' is not one of ${sizes.join(', ')}${task === 'detect' ? '' : ` (${task})`}` : `its layer widths match none of the sizes ${sizes.join(', ')}`;
    const advice = 'Re-download the weights or re-save them from the original model; from the API, LibreYOLO(path, { size }) names the size when the file does not.';
    throw new LibreYOLOError('model_load_failed', `Cannot load ${path}: it looks like a ${family.name} checkpoint, but ${what}. ${advice}`, { suggestion: advice });
  }
  let network;
  try {
    network = family.create({ size, stateDict: ckpt.stateDict, task });
  } catch (err) {
    if (!(err instanceof LibreYOLOError)) throw err;
    // The family says what did not fit; add which file and what to do about it.
    const advice = 'Re-download the weights or re-save them from the original model.';
    throw new LibreYOLOError(err.code, `Cannot load ${path} as ${family.name}-${size}: ${err.message} ${advice}`, { cause: err, suggestion: advice });
  }
  if (meta.names) checkNamesCover(meta.names, network.nc, path);
  const familyNames = meta.names ? null : family.defaultNames?.(network.nc) ?? null;
  return {
    family, size, task,
    names: familyNames ? Object.fromEntries(familyNames.map((n, i) => [i, n])) : namesOrDefault(meta.names, network.nc),
    imgsz: checkpointImgsz(family, size, meta.imgsz, task),
    network,
    metadata: meta,
  };
}

/** The family's quantize keep-float list and session config entries as engine options. */
export const familyEngineOptions = (family: ModelFamily): { keepFloat?: readonly string[]; configEntries?: Readonly<Record<string, string>> } => ({
  ...(family.quantize?.keepFloat.length ? { keepFloat: family.quantize.keepFloat } : {}),
  ...(family.sessionConfig ? { configEntries: family.sessionConfig } : {}),
});
