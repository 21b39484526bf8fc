/**
 * The family registry: how a model family plugs in. A family recognises its checkpoints, builds
 * its network (an emitting module tree) and declares its predict capabilities.
 */
import type { GraphBuilder } from '../graph/builder.ts';
import type { KeyLayout, Parameter } from '../graph/module.ts';
import type { HostTensor } from '../graph/tensor.ts';
import type { RgbImage } from '../data/image.ts';
import { LibreYOLOError } from '../errors.ts';

export type StateDict = Map<string, HostTensor>;

/**
 * Predict capabilities a family declares (the original's class flags). A family opts out of stacked
 * forwards, opts in to graph capture only once replay is verified for it, and tunes test-time
 * augmentation.
 */
export interface FamilyCapabilities {
  /** Several images per forward when `batch > 1` (default true). */
  SUPPORTS_BATCHED_PREDICT: boolean;
  /** `cuda_graph` / `capture_graph()` are allowed (default false: they raise). */
  SUPPORTS_CUDA_GRAPH: boolean;
  /** `augment: true` runs flipped (and scaled) views; false runs one plain pass. */
  TTA_ENABLED: boolean;
  /** The family resizes to a fixed square: only the flip is used, scales have no effect. */
  TTA_FIXED_SIZE: boolean;
  /** Scale factors of the TTA views (each also flipped). */
  TTA_SCALES: number[];
}

export const DEFAULT_CAPABILITIES: FamilyCapabilities = {
  SUPPORTS_BATCHED_PREDICT: true,
  SUPPORTS_CUDA_GRAPH: false,
  TTA_ENABLED: true,
  TTA_FIXED_SIZE: false,
  TTA_SCALES: [1.0],
};

export interface InferenceEmitOptions {
  batch: number | null;
  height: number | null;
  width: number | null;
  rawOutputs?: boolean;
}

/**
 * One image's network input, planned before it is written: the shape and dtype decide whether a
 * chunk can be stacked, and `write` fills a caller-owned buffer (a slot of the stacked batch).
 */
export interface PreprocessPlan {
  /** `[1, C, H, W]` */
  dims: number[];
  dtype: 'float32';
  /** Canvas pixels per original pixel (boxes go back by dividing by it; padding is right/bottom). */
  ratio: number;
  write(out: Float32Array, offset: number): void;
}

/** Boxes of one image: N x 4 xyxy in original-image pixels, scores, class ids as floats. */
export interface DetectionSet {
  xyxy: Float32Array;
  conf: Float32Array;
  cls: Float32Array;
}

/** What a family's candidate step needs to threshold and map boxes back to the original image. */
export interface CandidateOptions {
  conf: number;
  /** Canvas pixels per original pixel. */
  ratio: number;
  origWidth: number;
  origHeight: number;
}

/** What a family's network offers the rest of the library. */
export interface DetectionNetwork {
  readonly nc: number;
  /**
   * Train mode (BatchNorm on batch statistics): predict never stacks images while it is set, since
   * images of one chunk would change each other's results.
   */
  training?: boolean;
  emitInference(b: GraphBuilder, opts: InferenceEmitOptions): void;
  namedTensors(layout?: KeyLayout): Iterable<[string, Parameter]>;
  parameterCount(): number;
}

export interface ModelFamily {
  readonly name: string;
  /** File-name prefix of published weights (`LibreYOLO9` -> `LibreYOLO9t.pt`). */
  readonly filenamePrefix: string;
  readonly sizes: readonly string[];
  readonly defaultImgsz: number;
  /** Input sizes must be multiples of this. */
  readonly imgszStride: number;
  readonly capabilities: FamilyCapabilities;
  /**
   * Input side per size, for families whose sizes differ (the checkpoint's `imgsz` is then not
   * read); default `defaultImgsz`, or the checkpoint's `imgsz`.
   */
  readonly inputSizes?: Readonly<Record<string, number>>;
  /** Custom preprocessing; default: letterbox to the input size (see predict/preprocess.ts). */
  preprocess?(image: RgbImage, size: [number, number]): PreprocessPlan;
  /**
   * Candidate boxes of one image from its `[rows, cols]` slot (at `offset`) of the network output,
   * by the family's own scoring and box mapping; per-class NMS at `iou`, score order, `max_det`
   * and then the class filter follow in the predict path. Default: the `[4+nc, anchors]` xyxy +
   * class-score layout with multi-label thresholding (predict/postprocess.ts).
   */
  candidates?(output: Float32Array, offset: number, rows: number, cols: number, opts: CandidateOptions): DetectionSet;
  canLoad(keys: readonly string[]): boolean;
  detectSize(stateDict: StateDict): string | null;
  /** Builds a network; with a state dict, shaped from and loaded with it. */
  create(opts: { size: string; nc?: number; stateDict?: StateDict }): DetectionNetwork;
}

const families: ModelFamily[] = [];

export function registerFamily(family: ModelFamily): void {
  const i = families.findIndex((f) => f.name === family.name);
  if (i >= 0) families[i] = family; else families.push(family);
}

export function unregisterFamily(name: string): void {
  const i = families.findIndex((f) => f.name === name);
  if (i >= 0) families.splice(i, 1);
}

export function getFamily(name: string): ModelFamily {
  const f = families.find((x) => x.name === name);
  if (!f) throw new LibreYOLOError('model_family_mismatch', `Unknown model family '${name}'. Registered families: ${families.map((x) => x.name).join(', ')}.`);
  return f;
}

export function listFamilies(): readonly ModelFamily[] {
  return families;
}

/** Family for a state dict: metadata family first (if its keys fit), then the first that can load it. */
export function detectFamily(stateDict: StateDict, hint?: string): ModelFamily {
  const keys = [...stateDict.keys()];
  if (hint) {
    const f = families.find((x) => x.name === hint);
    if (f && f.canLoad(keys)) return f;
  }
  const f = families.find((x) => x.canLoad(keys));
  if (!f) {
    throw new LibreYOLOError('model_load_failed',
      `Could not detect model architecture from state dict keys.\nRegistered model families: ${families.map((x) => x.name).join(', ')}.`,
      { suggestion: 'Check that the file is a LibreYOLO checkpoint (a state_dict with keys like backbone.conv0.conv.weight).' });
  }
  return f;
}
