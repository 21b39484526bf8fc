/**
 * The browser's loaded detector: the same family network, graph and predict runner as Node's
 * LibreYOLOModel, with sessions in a Web Worker on onnxruntime-web. Training, export and file saves
 * stay Node-only.
 */
import { LibreYOLOError } from '../errors.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { familyImgszStride } from '../models/registry.ts';
import type { ModelIdentity } from '../models/from-checkpoint.ts';
import type { ModelFamily } from '../models/index.ts';
import { resolvePredictOptions, type PredictOptions, type ResolvedPredictOptions } from '../predict/options.ts';
import { runPredict, type PredictContext } from '../predict/predictor.ts';
import type { Results } from '../predict/results.ts';
import { checkTrackTask, splitTrackOptions, type TrackOptions } from '../predict/track-options.ts';
import { trackedResults } from '../predict/tracked.ts';
import { ByteTracker } from '../track/byte-tracker.ts';
import type { SessionEngine } from '../runtime/engine.ts';
import type { Warn } from '../util/warn.ts';
import { sourceItems, type BrowserImageSource } from './images.ts';

/** What a loaded file says about its model (a checkpoint's or an exported .onnx's). */
export interface BrowserModelInit extends ModelIdentity {
  format: 'pt' | 'safetensors' | 'onnx';
  /** An exported file whose input height and width are static: it runs at `imgsz` only. */
  fixedInput?: boolean;
}

export class BrowserModel {
  readonly family: ModelFamily;
  readonly size: string;
  readonly task: string;
  readonly names: Record<number, string>;
  readonly imgsz: [number, number];
  readonly format: 'pt' | 'safetensors' | 'onnx';
  /** An exported file whose input height and width are static: it runs at `imgsz` only. */
  readonly fixedInput: boolean;
  private closed = false;
  /** The tracker `track({ persist: true })` keeps between calls. */
  private persistentTracker: ByteTracker | null = null;

  /** The inference engine (sessions in the Web Worker); exposed for profiling and advanced use, as in Node. */
  readonly engine: SessionEngine;

  constructor(init: BrowserModelInit, engine: SessionEngine, private readonly warn: Warn) {
    this.engine = engine;
    this.family = init.family;
    this.size = init.size;
    this.task = init.task;
    this.names = init.names;
    this.imgsz = init.imgsz;
    this.format = init.format;
    this.fixedInput = init.fixedInput === true;
    this.nc = Object.keys(init.names).length;
  }

  readonly nc: number;

  get device(): string {
    return this.engine.device.id;
  }

  private ensureOpen(): void {
    if (this.closed) throw new LibreYOLOError('io_error', 'This model has been closed; load it again with LibreYOLO().');
  }

  /** The raw network output for a prepared `[B,3,H,W]` batch (the family's input layout), as Node's forward(). */
  async forward(images: HostTensor): Promise<HostTensor> {
    this.ensureOpen();
    if (images.dims.length !== 4 || images.dims[1] !== 3) {
      throw new LibreYOLOError('config_type_error', `forward() expects images shaped [B,3,H,W], got [${images.dims.join(',')}]`);
    }
    return (await this.engine.forward(images)).output;
  }

  private context(): PredictContext {
    const forward: PredictContext['forward'] = (x, o) => this.engine.forward(x, o);
    return {
      family: this.family, size: this.size, task: this.task, nc: this.nc, names: this.names, inputSize: this.imgsz, training: false, ...(this.fixedInput ? { fixedInputOf: 'this model' } : {}),
      forward, eagerForward: forward, acceptsBatch: (b) => this.engine.acceptsBatch(b), warn: this.warn,
    };
  }

  /** Results per image as each is ready; an array source gives one per element. */
  async *stream(source: BrowserImageSource | BrowserImageSource[], options: PredictOptions = {}): AsyncGenerator<Results> {
    this.ensureOpen();
    const { stream: _, ...rest } = options;
    const opts = this.resolve(rest);
    const list = Array.isArray(source) ? source : [source];
    yield* runPredict(this.context(), sourceItems(list), opts, Array.isArray(source));
  }

  /** The Node build's option checks, with what a page cannot do refused. */
  private resolve(options: PredictOptions): ResolvedPredictOptions {
    const opts = resolvePredictOptions(options as Record<string, unknown>, { names: this.names, imgszStride: familyImgszStride(this.family, this.size, this.task) }, this.warn);
    if (opts.cudaGraph !== 'off') throw new LibreYOLOError('config_unsupported', 'cuda_graph is not available in the browser build');
    if (opts.device !== undefined && opts.device !== this.device) {
      throw new LibreYOLOError('config_unsupported', `device is chosen at load in the browser build (this model runs on '${this.device}'); load it again with { device }`);
    }
    return opts;
  }

  /** One image gives one `Results`, an array gives `Results[]`; `{ stream: true }` gives an async iterator. */
  predict(source: BrowserImageSource[], options?: PredictOptions): Promise<Results[]>;
  predict(source: BrowserImageSource, options?: PredictOptions): Promise<Results>;
  predict(source: BrowserImageSource | BrowserImageSource[], options?: PredictOptions & { stream: true }): AsyncIterable<Results>;
  predict(source: BrowserImageSource | BrowserImageSource[], options: PredictOptions = {}): Promise<Results | Results[]> | AsyncIterable<Results> {
    if (options.stream === true) return this.stream(source, options);
    return (async () => {
      const out: Results[] = [];
      for await (const r of this.stream(source, options)) out.push(r);
      return Array.isArray(source) ? out : out[0]!;
    })();
  }

  /**
   * Tracks objects over frames (an iterable or async iterable of sources: an HTMLVideoElement yielded
   * once per frame, ImageBitmaps, VideoFrames, ...): one `Results` per kept frame with track ids in
   * `boxes.idData`, from the same ByteTracker and options as Node's track(). `persist: true` keeps
   * this model's tracker (and its ids) across calls. Saving the annotated video is Node-only.
   */
  async *track(frames: Iterable<BrowserImageSource> | AsyncIterable<BrowserImageSource>, options: TrackOptions = {}): AsyncGenerator<Results> {
    this.ensureOpen();
    checkTrackTask(this.task);
    if (options.save === true || options.output_path !== undefined) {
      throw new LibreYOLOError('config_unsupported', 'track() cannot save a video in the browser build; draw each result on a canvas with drawResults(canvas, results) instead.');
    }
    if (options.stream_buffer !== undefined) throw new LibreYOLOError('config_unsupported', 'stream_buffer is for live streams Node reads; in a page, yield the frames you want tracked.');
    const split = splitTrackOptions(options as Record<string, unknown>, this.warn);
    const opts = this.resolve(split.detector);
    let tracker: ByteTracker;
    if (split.persist) tracker = this.persistentTracker ??= new ByteTracker(split.config);
    else {
      this.persistentTracker = null;
      tracker = new ByteTracker(split.config);
    }
    let index = 0;
    for await (const frame of frames) {
      const k = index++;
      if (k % opts.vidStride !== 0) continue;
      for await (const r of runPredict(this.context(), sourceItems([frame]), opts, false)) {
        r.frame_idx = k;
        yield trackedResults(r, tracker);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.engine.close();
  }
}
