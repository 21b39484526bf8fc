/**
 * LibreYOLOModel: a loaded detector. It owns the network (or exported ONNX file), the metadata
 * (family, size, names, input size) and an inference engine whose sessions live in a worker.
 */
import { existsSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { checkOutputFolder } from './util/fs.ts';
import { LibreYOLOError } from './errors.ts';
import type { HostTensor } from './graph/tensor.ts';
import { checkFamilyImgsz, checkpointImgsz, familyImgszStride, type DetectionNetwork, type ModelFamily } from './models/registry.ts';
import type { ModelIdentity } from './models/from-checkpoint.ts';
import { resolveSources, type ImageSource } from './data/sources.ts';
import type { RawPixels } from './data/image.ts';
import { PREDICT_OPTIONS, resolvePredictOptions, type PredictOptions, type ResolvedPredictOptions } from './predict/options.ts';
import { normalizeImgsz } from './util/imgsz.ts';
import { defaultWarn, type Warn } from './util/warn.ts';
import { runPredict, type PredictContext } from './predict/predictor.ts';
import type { Results } from './predict/results.ts';
import { SourcesFailedError } from './predict/source-failures.ts';
import { checkAugmentAtCall, tilingMode } from './predict/task-gates.ts';
import { checkTrackTask, splitTrackOptions, type TrackOptions } from './predict/track-options.ts';
import { framesResults, videoSourceResults, VideoRun, type FrameInput } from './predict/video.ts';
import { ByteTracker } from './track/byte-tracker.ts';
import { isLiveSource, isVideoSource } from './video/sources.ts';
import { parseDevice, type Device } from './runtime/device.ts';
import type { SessionEngine } from './runtime/engine.ts';
import {
  captureUnavailableReason, GraphCaptureNotImplementedError, GraphRunner, unavailableError, type GraphInfo, type GraphMode,
} from './runtime/graph-capture.ts';
import { captureWebGpu } from './runtime/graph-capture-webgpu.ts';
import type { ExportOptions } from './export/onnx-export.ts';
import { cpuSlowWarning, RECIPE_DTYPE, resolveRecipe, type CastRecipe } from './quantize/recipes.ts';
import { precisionReport, type PrecisionReport } from './quantize/report.ts';
import { loadCheckpointFile } from './weights/checkpoint.ts';
import { loadStateDict } from './graph/state-dict.ts';
import type { TrainOptions, TrainResults, TrainRuntime } from './train/trainer.ts';
import type { TrainProfilerFactory } from './train/profiler-port.ts';
import type { CheckOptions, LossAndGradients, PlainTensor } from './train/check.ts';

/**
 * `train({ profile: true })` gets the same profiler as `libreyolo profile run`, loaded only when a
 * run profiles (the trainer declares the port, the profiler implements it).
 */
export const onDemandTrainProfiler: TrainProfilerFactory = async (ctx) => (await import('./profile/train-profiler.ts')).trainProfilerFactory()(ctx);

/** Called once the source is resolved, before any image loads: a throw here refuses the call. */
type SourceKindCheck = (isBatch: boolean, count: number, label: string) => void;

export type ModelFormat = 'pt' | 'safetensors' | 'onnx' | 'fresh';

export interface ModelInit extends ModelIdentity {
  weightsPath: string | null;
  format: ModelFormat;
  network: DetectionNetwork | null;
  engine: SessionEngine;
  /** Extra checkpoint metadata carried into exports. */
  metadata?: Record<string, unknown>;
  /** Precision of the weights as loaded (an fp16/bf16 ONNX file). */
  precision?: ModelPrecision;
  /** An exported file whose input height and width are static: predict runs at `imgsz` only. */
  fixedInput?: boolean;
  warn?: Warn;
}

export type ModelPrecision = 'fp32' | 'fp16' | 'bf16';

export interface QuantizeOptions {
  /** `fp16` or `bf16` (cast recipes); the original's other recipes are refused. */
  recipe: string;
  /** Calibration data: ignored by the cast recipes. */
  calib?: string | null;
}

export interface CaptureGraphOptions {
  /** Input size of the graph (default: the model's); must match predict's. */
  imgsz?: number | [number, number];
  /** Batch of the graph; must match how predict is called (a partial last chunk is another shape). */
  batch?: number;
  /** Input dtype; predict always feeds float32 (also after quantize). */
  dtype?: 'float32';
}

/** A loaded detector: `LibreYOLO(...)` returns one. Release its sessions with `close()`. */
export class LibreYOLOModel {
  /** The model family (`family.name`: `yolo9`, `yolox`, `rfdetr`, `dfine`) and what it supports. */
  readonly family: ModelFamily;
  /** The family's size letter (`t`, `s`, `m`, ...). */
  readonly size: string;
  /** Always `detect` (other tasks are refused at load). */
  readonly task: string;
  /** Class id -> name. */
  readonly names: Record<number, string>;
  private inputSize: [number, number];
  /** An exported file whose input height and width are static: it runs at `imgsz` only. */
  readonly fixedInput: boolean;
  private weightsFile: string | null;
  private weightsFormat: ModelFormat;
  /** The network in the TypeScript graph IR; null for an exported `.onnx` (its graph is opaque). */
  readonly network: DetectionNetwork | null;
  /** The checkpoint's LibreYOLO metadata as read (`model_family`, `names`, `imgsz`, ...). */
  readonly metadata: Record<string, unknown>;
  /** The inference engine (sessions in a worker); exposed for profiling and advanced use. */
  readonly engine: SessionEngine;
  private readonly warn: Warn;
  private closed = false;
  private loadedPrecision: ModelPrecision;
  private recipe: CastRecipe | null = null;
  private graphRunner: GraphRunner | null = null;
  /** train/check.ts once lossAndGradients() ran (its sessions are released on close). */
  private checkModule: typeof import('./train/check.ts') | null = null;
  /** The tracker `track({ persist: true })` keeps between calls. */
  private persistentTracker: ByteTracker | null = null;

  constructor(init: ModelInit) {
    this.family = init.family;
    this.size = init.size;
    this.task = init.task;
    this.names = init.names;
    this.inputSize = init.imgsz;
    this.fixedInput = init.fixedInput === true;
    this.weightsFile = init.weightsPath;
    this.weightsFormat = init.format;
    this.network = init.network;
    this.engine = init.engine;
    this.metadata = init.metadata ?? {};
    // A quantized bf16 file declares float32 IO, so only its metadata tells.
    this.loadedPrecision = this.metadata.precision === 'bf16' ? 'bf16' : init.precision ?? 'fp32';
    this.warn = init.warn ?? defaultWarn;
  }

  /** Default network input size `[h, w]`; after `train()`, the trained checkpoint's (as loading it gives). */
  get imgsz(): [number, number] {
    return this.inputSize;
  }

  /** The weights file the model runs; after `train()`, best.pt (else last.pt), as the original's `model_path`. */
  get weightsPath(): string | null {
    return this.weightsFile;
  }

  /** What the weights were loaded from: `pt`, `safetensors`, `onnx`, or `fresh` (new weights). */
  get format(): ModelFormat {
    return this.weightsFormat;
  }

  /** Number of classes. */
  get nc(): number {
    return Object.keys(this.names).length;
  }

  /** Where the sessions run (`device.id`: `cpu`, `cuda:0`, `webgpu`). */
  get device(): Device {
    return this.engine.device;
  }

  /** Parameter count of the network (0 for exported ONNX models, whose weights are opaque). */
  parameterCount(): number {
    return this.network?.parameterCount() ?? 0;
  }

  /**
   * Moves the model to another device: its sessions are released (new ones are created there on the
   * next forward) and captured graphs are dropped. `cuda` and `cuda:0` are the same device.
   */
  async to(device: string | number): Promise<this> {
    const target = parseDevice(device);
    if (target.id === this.engine.device.id) return this;
    await this.releaseGraphs();
    await this.engine.moveTo(target);
    return this;
  }

  /** The precision the weights run in: fp32, or fp16/bf16 after quantize() or from a half ONNX file. */
  get precision(): ModelPrecision {
    return this.recipe ?? this.loadedPrecision;
  }

  /** What the predict runner needs; `mode` is the call's graph-capture mode (scoped to that call). */
  private context(mode: GraphMode, validation = false): PredictContext {
    const engine = this.engine;
    const eager: PredictContext['forward'] = (x, o) => engine.forward(x, o);
    return {
      family: this.family, size: this.size, task: this.task, nc: this.nc, names: this.names, inputSize: this.imgsz, ...(this.fixedInput ? { fixedInputOf: this.weightsFile ?? 'the model' } : {}),
      training: this.network?.training === true,
      // Graph forwards keep their input (capture compares it with eager runs), so nothing is transferred.
      forward: mode === 'off' ? eager : (x) => this.runner().run(x, mode === 'auto'),
      eagerForward: eager,
      acceptsBatch: (b) => engine.acceptsBatch(b),
      warn: this.warn,
      ...(validation ? { validation } : {}),
    };
  }

  private ensureOpen(): void {
    if (this.closed) throw new LibreYOLOError('io_error', 'This model has been closed; load it again with LibreYOLO().');
  }

  /**
   * Detects objects. A single image gives one `Results`; a list or folder gives `Results[]`.
   * Sources: file path, folder, http(s) URL, Buffer, raw pixels `{data, width, height}`, or a list.
   * A string may name a file or a folder, so its type is `Results | Results[]`; `predictOne()` and
   * `predictAll()` give one fixed type for strict TypeScript.
   * In a list or folder, images that cannot be read do not stop the others: once every good result
   * is out, a `SourcesFailedError` names each bad image (`failures`) and, for the array form,
   * carries the good results (`results`).
   */
  predict(source: ImageSource | ImageSource[], options: PredictOptions & { stream: true }): AsyncIterable<Results>;
  predict(source: ImageSource[], options?: PredictOptions): Promise<Results[]>;
  predict(source: Uint8Array | RawPixels, options?: PredictOptions): Promise<Results>;
  predict(source: ImageSource, options?: PredictOptions): Promise<Results | Results[]>;
  predict(source: ImageSource | ImageSource[], options: PredictOptions = {}): Promise<Results | Results[]> | AsyncIterable<Results> {
    if (options.stream === true) return this.streamResults(source, options); // any other value is validated (and refused) below
    if (isLiveSource(videoPath(source))) {
      return Promise.reject(new LibreYOLOError('config_conflict', `${videoPath(source)} is a live stream, which has no end to collect results at: use predict(source, { stream: true }) and read them as they come.`));
    }
    return (async () => {
      let isBatch = false;
      const out = await this.collect(source, options, (b) => (isBatch = b));
      return isBatch ? out : out[0]!;
    })();
  }

  /** One image, one `Results`: a folder or list source is refused before anything runs. */
  async predictOne(source: ImageSource, options: PredictOptions & { stream?: false } = {}): Promise<Results> {
    this.refuseStream('predictOne', options);
    if (isVideoSource(videoPath(source))) {
      throw new LibreYOLOError('config_type_error', `predictOne() takes one image, but ${videoPath(source)} is a video; use predict() or predictAll() (one Results per frame)`);
    }
    const [result] = await this.collect(source, options, (isBatch, count, label) => {
      if (isBatch) {
        throw new LibreYOLOError('config_type_error', `predictOne() takes one image, but ${label} holds ${count} image${count === 1 ? '' : 's'}; use predictAll() for a folder or a list`);
      }
    });
    return result!;
  }

  /** Always an array: one `Results` per image, in order (a single image gives a one-element array). */
  predictAll(source: ImageSource | ImageSource[], options: PredictOptions & { stream?: false } = {}): Promise<Results[]> {
    this.refuseStream('predictAll', options);
    return this.collect(source, options);
  }

  private refuseStream(method: string, options: PredictOptions): void {
    if (options.stream) {
      throw new LibreYOLOError('config_conflict', `${method}() returns its results together; for an async iterator call predict(source, { stream: true })`);
    }
  }

  private async collect(source: ImageSource | ImageSource[], options: PredictOptions, onKind?: SourceKindCheck): Promise<Results[]> {
    const out: Results[] = [];
    try {
      for await (const r of this.streamResults(source, options, onKind)) out.push(r);
    } catch (err) {
      if (err instanceof SourcesFailedError) err.results = out; // the good results travel with the error
      throw err;
    }
    return out;
  }

  /**
   * predict() on image paths with the images prepared as the original's validator prepares them
   * (the family's `valInput`: D-FINE's OpenCV double resize), for `validate()`; other families
   * predict as usual.
   */
  async predictForValidation(paths: string[], options: PredictOptions): Promise<Results[]> {
    const out: Results[] = [];
    for await (const r of this.streamResults(paths, options, undefined, true)) out.push(r);
    return out;
  }

  /** Validates everything before loading any image, then yields results as they complete. */
  private async *streamResults(source: ImageSource | ImageSource[], options: PredictOptions, onKind?: SourceKindCheck, validation = false): AsyncGenerator<Results> {
    const opts = await this.openRun(options);
    if (opts.cudaGraph !== 'off') {
      const reason = captureUnavailableReason(this.device);
      if (reason !== null) throw unavailableError(this.device, reason);
    }
    const video = videoPath(source);
    if (isVideoSource(video)) {
      onKind?.(true, 0, video);
      const run = this.videoRun(video, opts, !options.stream);
      // The list form: every result learns the saved video's path once it has its final name.
      const collected: Results[] = [];
      for await (const r of run) {
        if (!options.stream) collected.push(r);
        yield r;
      }
      if (run.saved_path) for (const r of collected) r.saved_path = run.saved_path;
      return;
    }
    refuseFrameOptions(opts, video ?? 'this source');
    const { items, isBatch } = await resolveSources(source);
    onKind?.(isBatch, items.length, typeof source === 'string' ? source : source instanceof URL ? source.href : 'the list');
    yield* runPredict(this.context(opts.cudaGraph, validation), items, opts, isBatch);
  }

  /** What every predict run checks first: the model open, its options resolved, the save folder, graph support, the device, the task's gates. */
  private async openRun(options: PredictOptions): Promise<ResolvedPredictOptions> {
    this.ensureOpen();
    const opts = resolvePredictOptions(options as Record<string, unknown>, { names: this.names, imgszStride: familyImgszStride(this.family, this.size, this.task) }, this.warn);
    if (opts.save) checkSaveFolder(opts.outputPath, opts.projectDir, 'detect');
    if (opts.cudaGraph !== 'off') this.requireGraphSupport();
    if (opts.device !== undefined) await this.to(opts.device);
    this.checkTaskGates(opts);
    return opts;
  }

  private videoRun(video: string, opts: ResolvedPredictOptions, collecting: boolean): VideoRun {
    return new VideoRun((r) => videoSourceResults(r, this.context(opts.cudaGraph), video, opts, {
      mode: 'predict', tracker: null, save: opts.save, outputPath: opts.outputPath, warn: this.warn,
      // The list form holds every frame's results: the original's hint towards streaming.
      onOpen: (info) => {
        const n = Math.floor(info.totalFrames / opts.vidStride);
        if (collecting && n > 500) this.warn(`Video has ~${n} frames to process. Consider using stream=True to avoid high memory usage.`);
      },
    }));
  }

  /**
   * predict() over a video file or live stream as a `VideoRun`: iterate it for one `Results` per kept
   * frame; `info` (size, fps, frame count) is set once the source is open and `saved_path` once the
   * annotated video (`save: true`) has its final name. Options are checked at the first iteration.
   */
  predictVideo(source: string | URL, options: PredictOptions = {}): VideoRun {
    const video = String(source instanceof URL ? source.href : source);
    return new VideoRun(async function* (this: LibreYOLOModel, run: VideoRun) {
      const opts = await this.openRun(options);
      const inner = this.videoRun(video, opts, false);
      try {
        for await (const r of inner) {
          run.info = inner.info;
          yield r;
        }
      } finally {
        run.info = inner.info;
        run.saved_path = inner.saved_path;
      }
    }.bind(this));
  }

  /**
   * Tracks objects with ByteTrack across the frames of a video file, a live stream (`rtsp://`,
   * `rtmp://`, `tcp://`, `udp://`, `srt://`, an http(s) `.m3u8`, `/dev/video<N>`), or frames the caller
   * supplies (a Buffer, raw pixels, or an (async) iterable of them). An async iterator of one tracked
   * `Results` per kept frame (`boxes.id`, `track_id`); nothing runs until it is iterated, and every
   * error appears at the first iteration. Keys besides the detector and saving controls are
   * `TrackConfig` keys; unknown ones are dropped with one warning, as in the original. After the run,
   * `saved_path` names the annotated video (`save: true`).
   */
  track(source: string | URL | FrameInput | Iterable<FrameInput> | AsyncIterable<FrameInput>, options: TrackOptions = {}): VideoRun {
    return new VideoRun(async function* (this: LibreYOLOModel, run: VideoRun) {
      this.ensureOpen();
      checkTrackTask(this.task);
      const split = splitTrackOptions(options as Record<string, unknown>, this.warn);
      const opts = resolvePredictOptions(split.detector as Record<string, unknown>, { names: this.names, imgszStride: familyImgszStride(this.family, this.size, this.task) }, this.warn);
      if (split.save) checkSaveFolder(split.outputPath, opts.projectDir, 'track');
      if (opts.cudaGraph !== 'off') this.requireGraphSupport();
      if (opts.device !== undefined) await this.to(opts.device);
      let tracker: ByteTracker;
      if (split.persist) tracker = this.persistentTracker ??= new ByteTracker(split.config);
      else {
        this.persistentTracker = null;
        tracker = new ByteTracker(split.config);
      }
      const req = { mode: 'track' as const, tracker, save: split.save, outputPath: split.outputPath, warn: this.warn };
      const ctx = this.context(opts.cudaGraph);
      const path = videoPath(source as ImageSource);
      if (path !== null) {
        if (!isLiveSource(path) && !existsSync(path)) {
          throw new LibreYOLOError('source_not_found', `Video file not found: ${path}`, { suggestion: 'Pass an existing video file, a live stream URL, or frames (Buffers or raw pixels).' });
        }
        yield* videoSourceResults(run, ctx, path, opts, req);
        return;
      }
      const frames = isFrameStream(source) ? source : [source as FrameInput];
      yield* framesResults(run, ctx, frames, opts, { ...req, rate: split.config.frame_rate });
    }.bind(this));
  }

  private checkTaskGates(opts: ResolvedPredictOptions): void {
    if (opts.augment) checkAugmentAtCall(this.task);
    if (opts.tiling) tilingMode(this.task);
  }

  /**
   * Runs the network on a prepared batch `[B,3,H,W]` (the family's input layout, e.g. RGB 0..1
   * letterboxed for YOLOv9) and returns the raw
   * output `[B,4+nc,anchors]`: the low-level entry point for parity checks and custom pipelines.
   */
  async forward(images: HostTensor): Promise<HostTensor> {
    this.ensureOpen();
    if (images.dims.length !== 4 || images.dims[1] !== 3) {
      throw new LibreYOLOError('config_type_error', `forward() expects images shaped [B,3,H,W], got [${images.dims.join(',')}]`);
    }
    return (await this.engine.forward(images)).output;
  }

  /** Writes an ONNX file (input `images`, output `output` [B,4+nc,A], LibreYOLO metadata); returns its path. */
  async export(options: ExportOptions = { format: 'onnx' }): Promise<string> {
    this.ensureOpen();
    // Loaded on first use, as the trainer: a predict-only program never loads either.
    const { exportOnnx } = await import('./export/onnx-export.ts');
    return exportOnnx(this, options, this.warn);
  }

  /**
   * Trains (or fine-tunes) this model: `data`, `epochs`, `batch`, `imgsz`, `workers`, `device`,
   * `optimizer`, `lr0`, `seed`, `project`, `name`, ... as the original. Writes
   * `runs/train/<name>[N]/weights/{last,best}.pt`, `results.csv` and the run config; afterwards this
   * model carries the trained weights (best.pt, else last.pt), as in the original.
   */
  async train(options: TrainOptions, runtime: TrainRuntime = {}): Promise<TrainResults> {
    this.ensureOpen();
    const { trainModel } = await import('./train/trainer.ts');
    const results = await trainModel(this, options, { warn: this.warn, profiler: onDemandTrainProfiler, ...runtime });
    const checkpoint = results.best_checkpoint ?? results.last_checkpoint;
    if (checkpoint && this.network) {
      const { stateDict, metadata, format } = await loadCheckpointFile(checkpoint);
      const loaded = loadStateDict(this.network, stateDict);
      if (loaded.mismatched.length === 0) {
        // The model becomes what LibreYOLO(checkpoint) would load: names, input size, file.
        if (metadata.names) Object.assign(this.names, metadata.names);
        this.inputSize = checkpointImgsz(this.family, this.size, metadata.imgsz, this.task);
        this.weightsFile = checkpoint;
        this.weightsFormat = format;
        await this.engine.releaseSessions(); // sessions rebuild from the new weights on next use
      } else {
        this.warn(`The trained model has a different class count; load it with LibreYOLO('${checkpoint}').`);
      }
    }
    return results;
  }

  /**
   * Loss components and the gradient of every parameter (by state_dict key) for one batch in train
   * mode, without changing the weights: `images` `[B,3,H,W]` in the family's network-input layout
   * (YOLOv9: RGB 0..1; YOLOX: BGR 0..255; letterboxed), `targets` `[B,M,5]` rows
   * `[cls, x1, y1, x2, y2]` normalised to 0..1 (all-zero or class -1 rows are padding).
   * `{ precision: 'float64' }` evaluates the same graph in exact float64 arithmetic on a worker
   * thread (slow; debugging); `{ switches: { use_l1: true } }` sets a family's loss switches.
   */
  async lossAndGradients(images: PlainTensor, targets: PlainTensor, options: CheckOptions = {}): Promise<LossAndGradients> {
    this.ensureOpen();
    if (!this.network) {
      throw new LibreYOLOError('config_unsupported', 'lossAndGradients() needs a trainable model loaded from .pt or .safetensors weights (not an exported .onnx).');
    }
    const check = this.checkModule ??= await import('./train/check.ts');
    return check.lossAndGradients(this.family, this.network, this.device, images, targets, options);
  }

  /** Releases the sessions and their worker thread. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.releaseGraphs();
    if (this.network && this.checkModule) await this.checkModule.releaseCheckSessions(this.network);
    await this.engine.close();
  }

  // ---- Precision: quantize / dequantize / precisionReport -------------------------------------

  /**
   * Converts the model to float16 (`fp16`) or bfloat16 (`bf16`) weights and compute, keeping float32
   * at its inputs and outputs. Ops the device has no half kernel for stay float32 (on the CPU
   * provider that is nearly every bfloat16 op): `precisionReport()` says what really runs. `calib`
   * is ignored (cast recipes need no calibration). Warns on CPU, where this is slow.
   */
  async quantize(options: QuantizeOptions): Promise<this> {
    this.ensureOpen();
    await this.releaseGraphs();
    const recipe = resolveRecipe(options?.recipe, this.family, this.recipe ?? (this.loadedPrecision === 'fp32' ? null : this.loadedPrecision));
    if (this.device.kind === 'cpu') this.warn(cpuSlowWarning(recipe));
    await this.engine.setPrecision(RECIPE_DTYPE[recipe]);
    this.recipe = recipe;
    return this;
  }

  /** Back to float32 compute. The weights were never modified, so nothing is lost. */
  async dequantize(): Promise<this> {
    this.ensureOpen();
    await this.releaseGraphs();
    if (this.recipe !== null) await this.engine.setPrecision('float32');
    this.recipe = null;
    return this;
  }

  /** Per part of the network, the element type its kernels really ran in (one profiled forward). */
  async precisionReport(options: { imgsz?: number | [number, number] } = {}): Promise<PrecisionReport> {
    this.ensureOpen();
    const imgsz = normalizeImgsz(options.imgsz, familyImgszStride(this.family, this.size, this.task), this.warn) ?? this.imgsz;
    const fileHalf = this.format === 'onnx' && this.recipe === null && this.metadata.half === 'True';
    const io = fileHalf ? { input: 'float16', output: 'float16' } : { input: 'float32', output: 'float32' };
    return precisionReport(this.engine, imgsz, this.precision, io);
  }

  // ---- Graph capture: captureGraph / graphInfo / releaseGraphs -------------------------------

  private requireGraphSupport(): void {
    if (!this.family.capabilities.SUPPORTS_CUDA_GRAPH) throw new GraphCaptureNotImplementedError(this.family.name);
  }

  private runner(): GraphRunner {
    return this.graphRunner ??= new GraphRunner(this.engine, this.family.name, captureWebGpu, this.warn);
  }

  /**
   * Captures the forward for one input shape now, so the first predict does not pay for it. Fails
   * with the reason on devices that cannot capture from Node (CPU; CUDA through onnxruntime-node).
   */
  async captureGraph(options: CaptureGraphOptions = {}): Promise<void> {
    this.ensureOpen();
    this.requireGraphSupport();
    const [h, w] = normalizeImgsz(options.imgsz, familyImgszStride(this.family, this.size, this.task), this.warn) ?? this.imgsz;
    checkFamilyImgsz(this.family, [h, w]);
    const batch = PREDICT_OPTIONS.batch.rule.check('batch', options.batch ?? 1);
    const dtype = options.dtype ?? 'float32';
    if (dtype !== 'float32') throw new LibreYOLOError('config_range_error', `capture_graph dtype must be 'float32' (predict feeds float32, also after quantize), got '${String(dtype)}'`);
    await this.runner().capture({ dtype, dims: [batch, 3, h, w], data: new Float32Array(batch * 3 * h * w) });
  }

  /** Captured graphs, their replay counts, and why forwards ran eager. */
  graphInfo(): GraphInfo {
    if (this.graphRunner) return this.graphRunner.info();
    return {
      family: this.family.name, supported: this.family.capabilities.SUPPORTS_CUDA_GRAPH && captureUnavailableReason(this.device) === null,
      captured: [], graph_count: 0, eager_fallbacks: 0, fallback_reason: null,
    };
  }

  /** Frees captured graphs and resets the cache's counters (device moves and quantize call this). */
  async releaseGraphs(): Promise<void> {
    const r = this.graphRunner;
    this.graphRunner = null;
    await r?.release();
  }

  // Methods are camelCase; the original's snake_case method names stay as aliases, so its scripts port
  // unchanged (options and CLI keys keep snake_case: `max_det`).

  /** Alias of `captureGraph()` (the original's name). */
  capture_graph(options: CaptureGraphOptions = {}): Promise<void> {
    return this.captureGraph(options);
  }

  /** Alias of `graphInfo()` (the original's name). */
  graph_info(): GraphInfo {
    return this.graphInfo();
  }

  /** Alias of `releaseGraphs()` (the original's name). */
  release_graphs(): Promise<void> {
    return this.releaseGraphs();
  }

  /** A plain summary: family, size, task, nc, imgsz, format, precision, device, weights, parameters. */
  info(): Record<string, unknown> {
    return {
      family: this.family.name, size: this.size, task: this.task, nc: this.nc, imgsz: this.imgsz,
      format: this.format, precision: this.precision, device: this.device.id, weights: this.weightsPath,
      parameters: this.parameterCount(),
    };
  }
}

/** The path or URL a source names, or null for in-memory images and lists. */
function videoPath(source: ImageSource | readonly ImageSource[] | unknown): string | null {
  if (source instanceof URL) return source.href;
  return typeof source === 'string' ? source : null;
}

function isFrameStream(v: unknown): v is Iterable<FrameInput> | AsyncIterable<FrameInput> {
  if (v === null || typeof v !== 'object' || v instanceof Uint8Array) return false;
  return Symbol.iterator in v || Symbol.asyncIterator in v;
}

/** vid_stride and stream_buffer shape videos and live streams; on anything else they are refused, not ignored. */
/**
 * Before any image is read: the folder saving would create (the output_path's, or runs/<task> under
 * project_dir) must not run into a file where a folder should be.
 */
function checkSaveFolder(outputPath: string | undefined, projectDir: string, task: string): void {
  if (outputPath === undefined) {
    checkOutputFolder('project_dir', join(projectDir, 'runs', task));
    return;
  }
  const target = resolve(projectDir, outputPath);
  // A path with a suffix names the saved file (or an existing folder, whose parent is a folder too).
  checkOutputFolder('output_path', extname(target) !== '' && !/[\\/]$/.test(outputPath) ? dirname(target) : target);
}

function refuseFrameOptions(opts: ResolvedPredictOptions, what: string): void {
  if (opts.vidStride > 1) {
    const nth = opts.vidStride === 2 ? '2nd' : opts.vidStride === 3 ? '3rd' : `${opts.vidStride}th`;
    throw new LibreYOLOError('config_conflict', `vid_stride=${opts.vidStride} keeps every ${nth} frame of a video or live stream, but ${what} is not one (images, folders and lists have no frames to skip). Remove vid_stride.`);
  }
  if (opts.streamBuffer) {
    throw new LibreYOLOError('config_conflict', `stream_buffer=true queues the frames of a live stream, but ${what} is not one. Remove stream_buffer.`);
  }
}
