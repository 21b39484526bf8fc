/**
 * LibreYOLOModel: a loaded detector. It owns the network (or exported ONNX file), the metadata
 * (family, size, names, input size) and an inference engine whose sessions live in a worker.
 */
import { LibreYOLOError } from './errors.ts';
import type { HostTensor } from './graph/tensor.ts';
import type { DetectionNetwork, ModelFamily } from './models/registry.ts';
import { resolveSources, type ImageSource } from './data/sources.ts';
import { defaultWarn, resolvePredictOptions, type PredictOptions, type Warn } from './predict/options.ts';
import { predictSequential, type PredictContext } from './predict/predictor.ts';
import type { Results } from './predict/results.ts';
import { parseDevice, type Device } from './runtime/device.ts';
import type { SessionEngine } from './runtime/engine.ts';
import { exportOnnx, type ExportOptions } from './export/onnx-export.ts';

export type ModelFormat = 'pt' | 'safetensors' | 'onnx' | 'fresh';

export interface ModelInit {
  family: ModelFamily;
  size: string;
  task: string;
  names: Record<number, string>;
  imgsz: [number, number];
  weightsPath: string | null;
  format: ModelFormat;
  network: DetectionNetwork | null;
  engine: SessionEngine;
  /** Extra checkpoint metadata carried into exports. */
  metadata?: Record<string, unknown>;
  precision?: 'fp32' | 'fp16';
  warn?: Warn;
}

export class LibreYOLOModel {
  readonly family: ModelFamily;
  readonly size: string;
  readonly task: string;
  readonly names: Record<number, string>;
  /** Default network input size `[h, w]`. */
  readonly imgsz: [number, number];
  readonly weightsPath: string | null;
  readonly format: ModelFormat;
  readonly network: DetectionNetwork | null;
  readonly metadata: Record<string, unknown>;
  readonly precision: 'fp32' | 'fp16';
  /** The inference engine (sessions in a worker); exposed for profiling and advanced use. */
  readonly engine: SessionEngine;
  private readonly warn: Warn;
  private closed = false;

  constructor(init: ModelInit) {
    this.family = init.family;
    this.size = init.size;
    this.task = init.task;
    this.names = init.names;
    this.imgsz = init.imgsz;
    this.weightsPath = init.weightsPath;
    this.format = init.format;
    this.network = init.network;
    this.engine = init.engine;
    this.metadata = init.metadata ?? {};
    this.precision = init.precision ?? 'fp32';
    this.warn = init.warn ?? defaultWarn;
  }

  get nc(): number {
    return Object.keys(this.names).length;
  }

  get device(): Device {
    return this.engine.device;
  }

  /** Parameter count of the network (0 for exported ONNX models, whose weights are opaque). */
  parameterCount(): number {
    return this.network?.parameterCount() ?? 0;
  }

  /** Moves the model to another device; sessions there are created on the next predict. */
  async to(device: string | number): Promise<this> {
    await this.engine.moveTo(parseDevice(device));
    return this;
  }

  private context(): PredictContext {
    return { engine: this.engine, nc: this.nc, names: this.names, inputSize: this.imgsz };
  }

  private ensureOpen(): void {
    if (this.closed) throw new LibreYOLOError('io_error', 'This model has been closed; load it again with LibreYOLO().');
  }

  /**
   * Detects objects. A single image gives one `Results`; a list or folder gives `Results[]`.
   * Sources: file path, folder, http(s) URL, Buffer, raw pixels `{data, width, height}`, or a list.
   */
  predict(source: ImageSource | ImageSource[], options: PredictOptions & { stream: true }): AsyncIterable<Results>;
  predict(source: ImageSource[], options?: PredictOptions): Promise<Results[]>;
  predict(source: ImageSource, options?: PredictOptions): Promise<Results | Results[]>;
  predict(source: ImageSource | ImageSource[], options: PredictOptions = {}): Promise<Results | Results[]> | AsyncIterable<Results> {
    if (options.stream) return this.streamResults(source, options);
    return (async () => {
      const out: Results[] = [];
      let isBatch = false;
      for await (const r of this.streamResults(source, options, (b) => (isBatch = b))) out.push(r);
      return isBatch ? out : out[0]!;
    })();
  }

  /** Validates everything before loading any image, then yields results as they complete. */
  private async *streamResults(source: ImageSource | ImageSource[], options: PredictOptions, onKind?: (isBatch: boolean) => void): AsyncGenerator<Results> {
    this.ensureOpen();
    const opts = resolvePredictOptions(options as Record<string, unknown>, { names: this.names, imgszStride: this.family.imgszStride }, this.warn);
    if (opts.device !== undefined) await this.to(opts.device);
    const { items, isBatch } = await resolveSources(source);
    onKind?.(isBatch);
    yield* predictSequential(this.context(), items, opts, isBatch);
  }

  /**
   * Runs the network on a prepared batch `[B,3,H,W]` (RGB, 0..1, letterboxed) and returns the raw
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
    return exportOnnx(this, options);
  }

  /** Releases the sessions and their worker thread. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.engine.close();
  }

  info(): Record<string, unknown> {
    return {
      family: this.family.name, size: this.size, task: this.task, nc: this.nc, imgsz: this.imgsz,
      format: this.format, precision: this.precision, device: this.device.id, weights: this.weightsPath,
      parameters: this.parameterCount(),
    };
  }
}
