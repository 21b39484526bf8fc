/**
 * The family registry and the family contract: everything that differs between detector families
 * lives behind `ModelFamily` (one folder under src/models/<family>/ plus one registry line in
 * models/index.ts). The predictor, trainer, step builder, checker, auto-batch, export, quantize,
 * profiler, CLI and hub names ask the family; none of them names one. docs/families.md explains
 * each field and how to add a family.
 */
import type { GraphBuilder } from '../graph/builder.ts';
import type { KeyLayout, Parameter } from '../graph/module.ts';
import type { HostTensor } from '../graph/tensor.ts';
import type { RgbImage } from '../data/rgb-image.ts';
import type { AugmentRecipe, StepSchedule } from '../data/recipe.ts';
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

/**
 * How an image becomes the network input (implemented once, in predict/preprocess.ts, for predict,
 * tiling, TTA and validation; the trainer converts its batches with the same spec):
 * `letterbox` keeps the aspect ratio and pads right/bottom with `pad`; `stretch` resizes to the
 * input size ignoring the aspect ratio. Values are `(pixel * scale - mean) / std` per channel, in
 * `channels` order, each step rounded to float32 as the originals' numpy code does. Boxes map back by dividing x by the x ratio and y by the y ratio.
 */
export interface PreprocessSpec {
  resize: 'letterbox' | 'stretch';
  /** The stretch kernel: OpenCV's INTER_LINEAR (default) or Pillow's antialiased BILINEAR (`pil`, the DETR originals). */
  filter?: 'linear' | 'pil';
  /** Padding pixel value (0..255), letterbox only. */
  pad: number;
  channels: 'rgb' | 'bgr';
  /** Multiplies 0..255 pixel values: 1/255 gives 0..1, 1 keeps 0..255. */
  scale: number;
  /** Per-channel mean and std (in `channels` order) applied after `scale`; none by default. */
  mean?: readonly [number, number, number];
  std?: readonly [number, number, number];
}

/** YOLOv9's input (and the default): top-left letterbox, pad 114, RGB, 0..1. */
export const LETTERBOX_RGB_UNIT: PreprocessSpec = { resize: 'letterbox', pad: 114, channels: 'rgb', scale: 1 / 255 };

/**
 * How detections come out of the predict output `[B, 4+nc, A]` (x1,y1,x2,y2 in network-input pixels,
 * then per-class scores): greedy NMS per class (or across classes with `agnostic`), or the NMS-free
 * DETR selection of the `k` best (query, class) pairs (predict/postprocess.ts implements both).
 */
export type PostprocessSpec =
  | { kind: 'nms'; agnostic: boolean }
  /**
   * NMS-free: the `k` best (query, class) pairs over every score row of the output (a `max_det`
   * other than the predict default replaces `k`); `clip: false` keeps boxes as predicted (DETRs
   * do not clip to the image), else they are clamped and empty ones dropped.
   */
  | {
    kind: 'topk'; k: number; clip?: boolean;
    /**
     * Class id of each score column for a model of `nc` classes whose output has `columns` of them
     * (-1: the column's pairs are dropped after the conf threshold), or null for the identity. An
     * upstream RF-DETR COCO head (91 columns, COCO category ids) read as the 80 COCO classes maps.
     */
    columnClasses?: (columns: number, nc: number) => Int32Array | null;
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
  /** Canvas pixels per original pixel along x (boxes go back by dividing by it; padding is right/bottom). */
  ratio: number;
  /** Along y when it differs from `ratio` (resize-stretch). */
  ratioY?: number;
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

/**
 * Instance masks of one image, stored compactly: per mask, run lengths over the row-major
 * `height x width` pixels, alternating unset/set and starting with a (possibly empty) unset run.
 */
export interface MaskSet {
  height: number;
  width: number;
  runs: Int32Array[];
}

/** What a segment-task family needs to turn one image's forward outputs into masks. */
export interface MaskInputs {
  /** Every output of the forward by name (`output` first, then the family's mask outputs). */
  outputs: Readonly<Record<string, HostTensor>>;
  /** This image's batch index in those outputs. */
  index: number;
  /** The network input `[h, w]`. */
  inputHeight: number;
  inputWidth: number;
  /** Canvas pixels per original pixel (x, and y when it differs). */
  ratio: number;
  ratioY?: number;
  origWidth: number;
  origHeight: number;
}

/**
 * Instance segmentation (task `segment`) of a family: candidates with their source rows, the
 * shared NMS (or top-k) and max_det in between, then the masks of the kept rows.
 */
export interface SegmentHooks {
  /** Output names of the segment predict graph and export after the box output, in order. */
  readonly maskOutputs: readonly string[];
  /**
   * Candidate boxes (mapped to the original image) of one image, each with its source row (anchor),
   * for the shared NMS; absent for an NMS-free family (postprocess `topk`): the shared top-k over
   * `output` picks the rows, each with its query as source.
   */
  candidates?(inputs: MaskInputs, conf: number): DetectionSet & { source: Int32Array };
  /** The masks of the kept candidates `source`, at the original image size. */
  masks(inputs: MaskInputs, source: Int32Array): MaskSet;
}

/** The size table of one task of a family (`ModelFamily.taskSizes`). */
export interface TaskSizeTable {
  readonly sizes: readonly string[];
  readonly inputSizes: Readonly<Record<string, number>>;
  readonly imgszStride: Readonly<Record<string, number>>;
}

/** What a family's network offers the rest of the library. */
export interface DetectionNetwork {
  readonly nc: number;
  /**
   * Train mode (BatchNorm on batch statistics): predict never stacks images while it is set, since
   * images of one chunk would change each other's results.
   */
  training?: boolean;
  /** The predict graph: input `images`, output `output` `[B, 4+nc, A]` (see PostprocessSpec). */
  emitInference(b: GraphBuilder, opts: InferenceEmitOptions): void;
  /** The exported graph when it differs from the predict graph (the original's export layout). */
  emitExport?(b: GraphBuilder, opts: InferenceEmitOptions): void;
  namedTensors(layout?: KeyLayout): Iterable<[string, Parameter]>;
  parameterCount(): number;
}

/**
 * Multi-scale training (`multi_scale=true`): the batches of a run train at input sides drawn from
 * the family's list. The trainer draws uniformly from `sizes` (repeats weight the draw) with the
 * run's seed, resizes the loader's batch to the drawn side (`resize`), and trains every size in
 * one session: the step builds its graphs at each distinct size and merges them
 * (graph/passes/share-shapes.ts), so a family's graphs must have the same nodes at every size in
 * its list, with everything that depends on the size (position embeddings, anchors, reshape
 * targets) a constant of the graph built at that size.
 */
export interface MultiScale {
  /** The square sides a run at `imgsz` draws from; throws a LibreYOLOError for an imgsz whose list the network cannot train at. */
  sizes(imgsz: number, network: DetectionNetwork): readonly number[];
  /**
   * When a size is drawn: every batch (D-FINE's collate), or every optimizer step, the micro-batches
   * that accumulate into one step sharing it.
   */
  per: 'batch' | 'step';
  /**
   * `per: 'step'`: the side of optimizer step `step` (0-based over the run), for a family whose
   * original seeds the draw with the step index (RF-DETR); absent: uniform from the run's seed.
   */
  stepSide?(step: number, network: DetectionNetwork): number;
  /**
   * How the loader's batch `[B, 3, imgsz, imgsz]` becomes the drawn size: `bilinear` is torch's
   * F.interpolate (bilinear, align_corners False, no antialias) of the whole float batch; boxes are
   * normalised, so targets stay as they are.
   */
  resize: 'bilinear';
  /** The epochs multi-scale runs in, as a recipe step's schedule; absent: every epoch. */
  schedule?: StepSchedule;
}

/** The static shape of one training step (the loss graph is built per shape). */
export interface TrainShape {
  batch: number;
  height: number;
  width: number;
  /** Target rows per image (padding included). */
  maxTargets: number;
}

/**
 * The values the trainer's graph hands to a family's loss: `images` in the family's input layout,
 * `targets` `[B, M, 5]` rows `[cls, x1, y1, x2, y2]` normalised 0..1 (rows with cls < 0 or all zeros
 * are padding), the host assignment's inputs by name, and each switch as a float32 scalar 0/1.
 */
export interface LossInputs {
  images: string;
  targets: string;
  /** Segment training: `[B, M, H / r, W / r]` 0/1 mask targets, slot k for target row k (`TrainingHooks.maskRatio`). */
  masks?: string;
  assigned: Readonly<Record<string, string>>;
  switches: Readonly<Record<string, string>>;
}

/** Scalar graph values: the loss to differentiate, its logged components, foreground per image. */
export interface LossValues {
  total: string;
  components: Record<string, string>;
  numFg: string;
}

export interface HostTensorSpec {
  dtype: 'float32' | 'int64' | 'bool';
  dims: number[];
}

/**
 * Target assignment on the host, between the forward and the loss graph (SimOTA, Hungarian
 * matching): the step runs `emitPredictions` as a forward-only train-mode graph, calls `assign`
 * on its outputs, and feeds the result to the loss graph, whose `LossInputs.assigned` names them.
 */
export interface HostAssigner {
  /** Predictions the assignment reads: graph values (float32) with their dims, by output name. */
  emitPredictions(b: GraphBuilder, network: DetectionNetwork, images: string, shape: TrainShape): Record<string, { value: string; dims: number[] }>;
  /** The loss graph's assignment inputs, with their shapes (`network`: the one trained). */
  inputs(shape: TrainShape, nc: number, network: DetectionNetwork): Record<string, HostTensorSpec>;
  /**
   * The assignment for one batch (`targets` as LossInputs describes them), given this step's `draws`
   * (empty without) and the network trained.
   */
  assign(predictions: Record<string, HostTensor>, targets: HostTensor, shape: TrainShape, nc: number, draws: Readonly<Record<string, HostTensor>>, network: DetectionNetwork): Record<string, HostTensor>;
  /**
   * Random inputs the train forward itself declares and reads (D-FINE's denoising queries): drawn on
   * the host once per step from the batch's targets, fed to the assignment graph and the loss graph
   * alike, and handed to `assign`. `lossAndGradients(..., { draws })` injects given ones instead
   * (a reference's recorded RNG draws).
   */
  draws?: HostDraws;
}

export interface HostDraws {
  /** The draw inputs' names and shapes (fixed per train shape). */
  specs(shape: TrainShape, nc: number): Record<string, HostTensorSpec>;
  /** One step's draws; `rand` is uniform on [0, 1) (the step's seeded generator). */
  make(targets: HostTensor, shape: TrainShape, nc: number, rand: () => number): Record<string, HostTensor>;
}

/** What a trainable family gives the trainer. */
export interface TrainingHooks {
  /** Logged loss components, in display order (`box`, `dfl`, `cls`; results.csv `train/<name>_loss`). */
  lossNames: readonly string[];
  /** The components of a network whose task adds some (YOLOv9-seg: `seg`); absent: `lossNames`. */
  lossNamesFor?(network: DetectionNetwork): readonly string[];
  /**
   * The mask downsample ratio when `network` trains on mask targets (segment heads: 4), else null;
   * the trainer then builds `masks` targets from polygon labels and the graph takes them as `masks`.
   */
  maskRatio?(network: DetectionNetwork): number | null;
  /** Train-mode forward + loss (`b.training` is set, BatchNorm emits running-stat outputs). */
  emitLoss(b: GraphBuilder, network: DetectionNetwork, inputs: LossInputs, shape: TrainShape): LossValues;
  /** Host-side assignment; absent when the assignment is part of `emitLoss` (in-graph). */
  assigner?: HostAssigner;
  /** Loss switches (scalar inputs, 0 or 1) with the value they take in `epoch` of `epochs`. */
  switches?(epoch: number, cfg: { epochs: number; no_aug_epochs: number }): Record<string, boolean>;
  /** Training defaults over the core's (TRAIN_DEFAULTS); explicit options still win. */
  defaults: Readonly<Record<string, unknown>>;
  /** A network whose class layers fit `nc`, the other tensors taken from `stateDict` (the original's rebuild). */
  adaptClasses(stateDict: StateDict, size: string, nc: number, seed: number): DetectionNetwork;
  /** Re-seeds the fresh initialisation of a network `create` made. */
  initialize(network: DetectionNetwork, seed: number): void;
  /** Called on the network to train before the first step (not on resume): YOLOX's head-bias prior. */
  onSetup?(network: DetectionNetwork): void;
  /**
   * The family's own optimizer parameter groups over the trainable keys (state_dict order), given
   * the run's weight decay and lr0 and the network (its size may set a multiplier); absent: the
   * core's g0 (BN weights) / g1 (weights) / g2 (biases). A group's LR is the schedule's times
   * `lrMult`, so a group whose absolute LR must not follow lr0 sets lrMult = its LR / lr0.
   */
  paramGroups?(trainable: string[], cfg: { weightDecay: number; lr0: number }, network: DetectionNetwork): Array<{ name: string; keys: string[]; weightDecay: number; lrMult: number }>;
  /**
   * The LR set before the first optimizer step takes the group multipliers too (RF-DETR's groups
   * start at their own LRs); absent: every group starts at the schedule's plain LR (D-FINE).
   */
  firstLrScaled?: boolean;
  /** The family's own learning-rate schedule (per optimizer step); absent: the core's `scheduler`. */
  schedule?(cfg: ScheduleInputs): { lr(step: number): number };
  /** The family's `schedule` applies `lr_drop` (ScheduleInputs.lrDrop); absent: a run setting lr_drop is refused. */
  scheduleTakesLrDrop?: boolean;
  /**
   * The train augmentation pipeline as data (data/recipe.ts): named steps (mosaic, random_affine,
   * mixup, strong, hsv, flip) with their parameters, numbers or the train options holding them, and
   * schedules (close-mosaic: off in the last `no_aug_epochs`); absent: the core's `BASE_RECIPE`.
   */
  augment?: AugmentRecipe;
  /**
   * Train samples start from the decoded image rather than one first fitted into imgsz, so the
   * final resize is the only one (DEIM's `wants_unresized_image`); absent: pre-resized, as the
   * original's dataset does for every other family.
   */
  unresizedSamples?: boolean;
  /** Multi-scale training; absent: `multi_scale=true` is refused for the family. */
  multiScale?: MultiScale;
}

/** What a family's LR schedule is built from (the run's config and its length in optimizer steps). */
export interface ScheduleInputs {
  lr0: number;
  epochs: number;
  stepsPerEpoch: number;
  warmupEpochs: number;
  warmupLrStart: number;
  minLrRatio: number;
  noAugEpochs: number;
  /** Epoch from which the LR is x0.1 (`lr_drop`); null or absent: never. */
  lrDrop?: number | null;
}

/** The `lr_drop` factor at optimizer step `it`: 0.1 from step stepsPerEpoch x lrDrop on, else 1. */
export function lrDropFactor(it: number, c: Pick<ScheduleInputs, 'lrDrop' | 'stepsPerEpoch'>): number {
  return c.lrDrop !== null && c.lrDrop !== undefined && it >= c.lrDrop * c.stepsPerEpoch ? 0.1 : 1;
}

/** How exported ONNX files without LibreYOLO metadata are recognised, and read when their output differs. */
export interface OnnxRecognition {
  /**
   * Class count if an output of these dims (for an `h x w` input) is this family's export, else
   * null; `outputs` has every output's dims by name, for exports recognised by their output pair.
   */
  classCount(outputDims: readonly number[], hw: [number, number], outputs: Readonly<Record<string, readonly number[]>>): number | null;
  /** The export's output shape for messages, e.g. `[1,4+nc,8400]`. */
  layout(batch: number, hw: [number, number]): string;
  /**
   * Converts the file's output to the predict layout `[B, 4+nc, A]` (absent: it already is); `extra`
   * holds the file's other outputs by name, `inputDims` the `[B, 3, H, W]` input of the run.
   */
  toPredictLayout?(output: HostTensor, context: { extra: Record<string, HostTensor>; inputDims: readonly number[] }): HostTensor;
}

export interface ModelFamily {
  readonly name: string;
  /** Human name used in messages (`YOLOv9`). */
  readonly displayName: string;
  /** File-name prefix of published weights (`LibreYOLO9` -> `LibreYOLO9t.pt`, hub repo `LibreYOLO/LibreYOLO9t`). */
  readonly filenamePrefix: string;
  /** Task suffixes of published weights (`-seg` in `LibreYOLO9t-seg.pt`); default `['']`. */
  readonly weightTaskSuffixes?: readonly string[];
  readonly sizes: readonly string[];
  readonly defaultImgsz: number;
  /** Input sizes must be multiples of this. */
  readonly imgszStride: number;
  /** Square input sides the family accepts (fixed-size DETRs); absent: any multiple of `imgszStride`. */
  readonly fixedImgsz?: readonly number[];
  /** Default and lowest ONNX opset of its exports (LayerNormalization needs 17); default 13. */
  readonly exportOpset?: number;
  /** Export metadata lists only the model's own task (`supported_tasks='["segment"]'`, `default_task`), as the original's RF-DETR exporter. */
  readonly exportOwnTaskOnly?: boolean;
  /** A `dynamic` export frees the batch axis only; H and W stay the export size (the graph bakes size-dependent constants). */
  readonly staticExportSize?: boolean;
  readonly capabilities: FamilyCapabilities;
  /** Tasks the family runs (`detect`, `segment`); default `['detect']`. */
  readonly tasks?: readonly string[];
  /** The task a state dict's keys say (a mask head: `segment`), or null when they say none. */
  taskFromKeys?(keys: readonly string[]): string | null;
  /**
   * The refusal of a checkpoint whose `task` field differs from the requested task, when the family's
   * original words it its own way (RF-DETR); default: `Checkpoint was trained for task=...`.
   */
  taskMismatchMessage?(declared: string, requested: string): string;
  /** Instance masks, for families whose `tasks` include `segment`. */
  readonly segment?: SegmentHooks;
  /**
   * Input side per size, for families whose sizes differ (the checkpoint's `imgsz` is then not
   * read); default `defaultImgsz`, or the checkpoint's `imgsz`.
   */
  readonly inputSizes?: Readonly<Record<string, number>>;
  /**
   * Tasks whose networks differ in their size table (RF-DETR-seg: other sizes, inputs and patch):
   * per task, its sizes (a subset of `sizes`), the input side of each, and the stride input sizes
   * must be multiples of for each. A task not listed uses `sizes`, `inputSizes` and `imgszStride`.
   */
  readonly taskSizes?: Readonly<Record<string, TaskSizeTable>>;
  /**
   * Candidate boxes of one image from its `[rows, cols]` slot (at `offset`) of the network output,
   * by the family's own scoring and box mapping; per-class NMS at `iou`, score order, `max_det`
   * and then the class filter follow in the predict path. Default: the `[4+nc, anchors]` xyxy +
   * class-score layout with multi-label thresholding (predict/postprocess.ts).
   */
  candidates?(output: Float32Array, offset: number, rows: number, cols: number, opts: CandidateOptions): DetectionSet;
  /** Network input layout (default LETTERBOX_RGB_UNIT). */
  readonly input?: PreprocessSpec;
  /** Decode of the predict output (default per-class NMS). */
  readonly postprocess?: PostprocessSpec;
  /** Class names for a checkpoint that names none, by its network's class count (absent or null: COCO for 80, else class0...). */
  readonly defaultNames?: (networkNc: number) => readonly string[] | null;
  /** Fully custom preprocessing (e.g. PIL's antialiased resize); overrides `input` for predict. */
  preprocess?(image: RgbImage, size: [number, number]): PreprocessPlan;
  /**
   * Validation's input when the original's validator prepares images differently from predict
   * (absent: the predict preprocessing). `preResize`: the validation dataset's aspect-preserving
   * OpenCV INTER_LINEAR resize to fit the input first, then `resize` is applied to that image
   * (D-FINE: then an OpenCV stretch, where predict stretches the original with Pillow).
   */
  readonly valInput?: PreprocessSpec & { preResize?: boolean };
  /**
   * ONNX Runtime session config entries for this family's sessions (predict and reloaded exports),
   * e.g. `optimization.disable_specified_optimizers` for a fusion that is slower on its graph.
   */
  readonly sessionConfig?: Readonly<Record<string, string>>;
  /** Quantize fp16/bf16 is supported; node-name fragments listed here stay float32. */
  readonly quantize?: { keepFloat: readonly string[] };
  /** Training; absent: the family predicts only. */
  readonly train?: TrainingHooks;
  readonly onnx?: OnnxRecognition;
  canLoad(keys: readonly string[]): boolean;
  /**
   * Checked on the family found for a checkpoint, before it is built, with the file's path and
   * metadata family: a family whose keys another shares (D-FINE and DEIM) refuses files whose
   * name and metadata do not say it is this one.
   */
  checkSource?(source: { path: string; modelFamily: string | undefined }): void;
  detectSize(stateDict: StateDict): string | null;
  /** Builds a network for `task` (default `detect`); with a state dict, shaped from and loaded with it. */
  create(opts: { size: string; nc?: number; stateDict?: StateDict; task?: string }): DetectionNetwork;
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

/** One line per family for help texts: `yolo9 (YOLOv9: t, s, m, c)`. */
export function describeFamilies(): string {
  return families.map((f) => `${f.name} (${f.displayName}: ${f.sizes.join(', ')})`).join('; ');
}

/** The tasks a family runs, its default first. */
export function familyTasks(family: ModelFamily): readonly string[] {
  return family.tasks ?? ['detect'];
}

/** The sizes a family builds for `task`. */
export function familySizes(family: ModelFamily, task = 'detect'): readonly string[] {
  return family.taskSizes?.[task]?.sizes ?? family.sizes;
}

/** The first task (in the family's order) that builds `size`: a size only segmentation has (RF-DETR x) is a segment size. */
export function familySizeTask(family: ModelFamily, size: string): string {
  return familyTasks(family).find((t) => familySizes(family, t).includes(size)) ?? 'detect';
}

/** The default input side of a size (of `task`, default detect). */
export function familyImgsz(family: ModelFamily, size: string, task = 'detect'): number {
  const table = family.taskSizes?.[task];
  return (table ? table.inputSizes[size] : family.inputSizes?.[size]) ?? family.defaultImgsz;
}

/** Input sizes of a size (of `task`) must be multiples of this. */
export function familyImgszStride(family: ModelFamily, size: string, task = 'detect'): number {
  return family.taskSizes?.[task]?.imgszStride[size] ?? family.imgszStride;
}

/**
 * The default input `[h, w]` of a model loaded from a checkpoint that declares `declared` (its
 * `imgsz`, the training size): that size, except for families with per-size input sizes (YOLOX),
 * which keep their size's input as the original does. A model that trained keeps the same rule, so
 * it predicts at the size `LibreYOLO('best.pt')` would.
 */
export function checkpointImgsz(family: ModelFamily, size: string, declared: unknown, task = 'detect'): [number, number] {
  const perSize = family.taskSizes?.[task] ?? family.inputSizes;
  const side = !perSize && typeof declared === 'number' && Number.isInteger(declared) && declared > 0 ? declared : familyImgsz(family, size, task);
  return [side, side];
}

export function inputSpec(family: ModelFamily): PreprocessSpec {
  return family.input ?? LETTERBOX_RGB_UNIT;
}

export function postprocessSpec(family: ModelFamily): PostprocessSpec {
  return family.postprocess ?? { kind: 'nms', agnostic: false };
}

/** Refuses an input size a fixed-size family does not run, with the sizes it does. */
export function checkFamilyImgsz(family: ModelFamily, [h, w]: readonly [number, number]): void {
  const fixed = family.fixedImgsz;
  if (!fixed || (h === w && fixed.includes(h))) return;
  throw new LibreYOLOError('invalid_imgsz',
    `${family.name} models run at ${fixed.map((s) => `${s}x${s}`).join(' or ')} only, got ${h}x${w}. Pass imgsz=${fixed[0]} (or leave imgsz unset).`);
}

/** The family's training hooks, or a clear error for a family that cannot train. */
export function trainingHooks(family: ModelFamily): TrainingHooks {
  if (family.train) return family.train;
  const trainable = families.filter((f) => f.train).map((f) => f.name);
  throw new LibreYOLOError('config_unsupported', `Training is not implemented for ${family.name} models; trainable families: ${trainable.join(', ') || 'none'}.`);
}

/**
 * Family for a state dict: metadata family first (if its keys fit), then the first that can load
 * it; with the file's path (`source`), families whose keys fit alike are told apart by their
 * `checkSource` (D-FINE and DEIM: the file name).
 */
export function detectFamily(stateDict: StateDict, hint?: string, source?: string): ModelFamily {
  const keys = [...stateDict.keys()];
  if (hint) {
    const f = families.find((x) => x.name === hint);
    if (f && f.canLoad(keys)) {
      if (source) f.checkSource?.({ path: source, modelFamily: hint });
      return f;
    }
  }
  const f = families.find((x) => x.canLoad(keys));
  if (f && source) return familyForSource(f, keys, { path: source, modelFamily: hint });
  if (!f) {
    throw new LibreYOLOError('model_load_failed',
      `Could not detect model architecture from state dict keys.\nRegistered model families: ${families.map((x) => x.name).join(', ')}.`,
      { suggestion: 'Check that the file is a LibreYOLO checkpoint (a state_dict with keys like backbone.conv0.conv.weight).' });
  }
  return f;
}

/** The first family whose keys fit (from `first` on) that accepts the file; none: `first`'s refusal. */
function familyForSource(first: ModelFamily, keys: readonly string[], source: { path: string; modelFamily: string | undefined }): ModelFamily {
  let refusal: unknown = null;
  for (const f of families.slice(families.indexOf(first)).filter((x) => x.canLoad(keys))) {
    try {
      f.checkSource?.(source);
      return f;
    } catch (err) {
      refusal ??= err;
    }
  }
  throw refusal;
}
