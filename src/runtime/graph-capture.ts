/**
 * Graph capture (`cuda_graph`): the original's modes, cache and bookkeeping over ONNX Runtime.
 *
 * A captured graph replays a recorded forward instead of launching its kernels one by one. Node's
 * ORT binding cannot do this for CUDA (only `deviceId` reaches the CUDA provider: no
 * `enable_cuda_graph`, no device-memory IO binding, no `gpu_graph_id`), and the CPU provider has no
 * graphs at all, so those devices fail with an error that says so. The WebGPU provider's
 * `enableGraphCapture` session option is the one route Node has (graph-capture-webgpu.ts); a graph
 * counts as captured only after ORT's own profiler showed replayed runs executing no kernels and
 * their outputs matched eager ones, so no replay is ever reported that did not happen.
 */
import { LibreYOLOError } from '../errors.ts';
import type { HostTensor } from '../graph/tensor.ts';
import type { Device } from './device.ts';
import type { ForwardResult, SessionEngine } from './engine.ts';

export type GraphMode = 'off' | 'on' | 'auto';

export const DEFAULT_MAX_GRAPHS = 8;
export const DEFAULT_WARMUP_ITERS = 3;
/** 'auto' captures on the third forward at a shape (the original's code; its docs say "repeats"). */
export const DEFAULT_AUTO_THRESHOLD = 3;

/** Raised when graph capture is requested for a family that has not opted in (the original's NotImplementedError). */
export class GraphCaptureNotImplementedError extends LibreYOLOError {
  constructor(family: string) {
    super('config_unsupported',
      `cuda_graph is not supported for the '${family}' family yet. Capture requires a forward with no host-visible work, which is verified per family. `
      + 'Run without cuda_graph=true, or export to ONNX/TensorRT for a fused deployment path.');
    this.name = 'NotImplementedError';
  }
}

/** Raised when the device or runtime cannot capture (the original's CudaGraphUnavailable). */
export class CudaGraphUnavailable extends LibreYOLOError {
  constructor(message: string, cause?: unknown) {
    super('device_not_available', message, cause === undefined ? {} : { cause });
    this.name = 'CudaGraphUnavailable';
  }
}

function showValue(v: unknown): string {
  if (typeof v === 'string') return `'${v}'`;
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (v === null || v === undefined) return String(v);
  try { return JSON.stringify(v) ?? String(v); } catch { return String(v); }
}

/** `false`/`null` -> off, `true` -> on, `'auto'` (any case) -> auto; anything else is an error. */
export function normalizeGraphMode(value: unknown): GraphMode {
  if (value === false || value === null || value === undefined) return 'off';
  if (value === true) return 'on';
  if (typeof value === 'string' && value.toLowerCase() === 'auto') return 'auto';
  throw new LibreYOLOError('config_range_error', `Invalid cuda_graph=${showValue(value)}. Expected true, false or 'auto'.`);
}

/** Why `device` cannot capture graphs from Node, or null when it may (WebGPU, checked on capture). */
export function captureUnavailableReason(device: Device): string | null {
  switch (device.kind) {
    case 'cpu':
      return 'the CPU execution provider has no graph capture (captured graphs are a GPU execution-provider feature)';
    case 'cuda':
      return "onnxruntime-node cannot capture CUDA graphs: its binding passes only deviceId to the CUDA execution provider "
        + '(no enable_cuda_graph provider option, no device-memory IO binding, no gpu_graph_id run option)';
    case 'webgpu':
      return null;
  }
}

export function unavailableError(device: Device, reason: string, cause?: unknown): CudaGraphUnavailable {
  return new CudaGraphUnavailable(
    `cuda_graph cannot capture on device '${device.id}': ${reason}. Run without cuda_graph (eager runs give the same outputs), `
    + "or use device='webgpu' on a machine with a WebGPU adapter.", cause);
}

/** A verified captured graph for one input shape. */
export interface Replayer {
  replay(x: HostTensor): Promise<ForwardResult>;
  release(): Promise<void>;
}

/** Captures the forward of `engine` at `x`'s shape, or throws saying why it could not. */
export type CaptureBackend = (engine: SessionEngine, x: HostTensor, warmupIters: number) => Promise<Replayer>;

export interface CapturedGraphInfo {
  shape: number[];
  dtype: string;
  device: string;
  replays: number;
}

export interface GraphInfo {
  family: string;
  /**
   * Whether a capture can happen now: the family supports it, the device can capture from Node, and
   * no capture has failed since the last release_graphs(). (False on CPU, and after a failed capture.)
   */
  supported: boolean;
  captured: CapturedGraphInfo[];
  graph_count: number;
  max_graphs?: number;
  eager_fallbacks: number;
  fallback_reason: string | null;
}

interface Entry {
  info: CapturedGraphInfo;
  replayer: Replayer;
}

/** What `run` does for a shape: the runner's decision, kept pure so it is testable on any machine. */
export type GraphDecision = 'replay' | 'eager-counting' | 'eager-miss' | 'eager-limit' | 'capture';

export function decide(s: { captured: boolean; seen: number; auto: boolean; captureFailed: boolean; captureOnMiss: boolean; graphs: number; maxGraphs: number; autoThreshold: number }): GraphDecision {
  if (s.captured) return 'replay';
  if (s.auto && s.seen < s.autoThreshold) return 'eager-counting';
  if (s.captureFailed || !s.captureOnMiss) return 'eager-miss';
  if (s.graphs >= s.maxGraphs) return 'eager-limit';
  return 'capture';
}

export interface GraphRunnerOptions {
  maxGraphs?: number;
  warmupIters?: number;
  autoThreshold?: number;
}

/** The per-model graph cache, keyed by input shape, dtype and device. */
export class GraphRunner {
  private readonly graphs = new Map<string, Entry>();
  private readonly seen = new Map<string, number>();
  private readonly precaptured = new Set<string>();
  private misses = 0;
  private fallbackReason: string | null = null;
  private captureFailed = false;
  private warnedLimit = false;
  private warnedUnused = false;
  readonly maxGraphs: number;
  private readonly warmupIters: number;
  private readonly autoThreshold: number;

  constructor(
    private readonly engine: SessionEngine,
    private readonly family: string,
    private readonly backend: CaptureBackend,
    private readonly warn: (m: string) => void,
    options: GraphRunnerOptions = {},
  ) {
    this.maxGraphs = options.maxGraphs ?? DEFAULT_MAX_GRAPHS;
    this.warmupIters = options.warmupIters ?? DEFAULT_WARMUP_ITERS;
    this.autoThreshold = options.autoThreshold ?? DEFAULT_AUTO_THRESHOLD;
  }

  private key(x: HostTensor): string {
    return `${x.dims.join('x')}|${x.dtype}|${this.engine.device.id}`;
  }

  private noteFallback(reason: string): void {
    this.misses++;
    if (this.fallbackReason === null) {
      this.fallbackReason = reason;
      this.warn(`cuda_graph requested but running eager for ${this.family} (${reason})`);
    }
  }

  /** A forward through the cache: replay, capture, or eager (counted, with the reason kept). */
  async run(x: HostTensor, auto: boolean, captureOnMiss = true): Promise<ForwardResult> {
    const reason = captureUnavailableReason(this.engine.device);
    if (reason !== null) {
      this.noteFallback(reason);
      return this.engine.forward(x);
    }
    const key = this.key(x);
    const entry = this.graphs.get(key);
    const seen = entry ? 0 : (this.seen.get(key) ?? 0) + (auto ? 1 : 0);
    if (!entry && auto) this.seen.set(key, seen);
    switch (decide({ captured: !!entry, seen, auto, captureFailed: this.captureFailed, captureOnMiss, graphs: this.graphs.size, maxGraphs: this.maxGraphs, autoThreshold: this.autoThreshold })) {
      case 'replay': return this.replay(entry!, x);
      case 'eager-counting': return this.engine.forward(x);
      case 'eager-miss':
        this.misses++;
        return this.engine.forward(x);
      case 'eager-limit':
        if (!this.warnedLimit) {
          this.warnedLimit = true;
          this.warn(`cuda_graph: reached the ${this.maxGraphs}-graph cache limit for ${this.family}; further input shapes run eager. Fix the input size (imgsz=, batch=) to keep replays, or raise max_graphs.`);
        }
        this.misses++;
        return this.engine.forward(x);
      case 'capture': {
        this.warnIfPrecapturedUnused(x);
        try {
          await this.captureAt(key, x);
        } catch (err) {
          this.captureFailed = true;
          this.noteFallback(`capture failed: ${(err as Error).name}: ${(err as Error).message}`);
          return this.engine.forward(x);
        }
        return this.replay(this.graphs.get(key)!, x);
      }
    }
  }

  private async replay(entry: Entry, x: HostTensor): Promise<ForwardResult> {
    const out = await entry.replayer.replay(x);
    entry.info.replays++;
    return out;
  }

  private warnIfPrecapturedUnused(x: HostTensor): void {
    if (this.warnedUnused || this.precaptured.size === 0) return;
    const unused = [...this.precaptured].filter((k) => (this.graphs.get(k)?.info.replays ?? 0) === 0);
    if (!unused.length) return;
    this.warnedUnused = true;
    const shapes = unused.map((k) => `(${k.split('|')[0]!.split('x').join(', ')})`).join(', ');
    this.warn(`cuda_graph: capturing (${x.dims.join(', ')}) for ${this.family}, but pre-captured shape(s) ${shapes} were never used. `
      + 'capture_graph() was called with a shape predict does not produce; match imgsz/batch to your predict call.');
  }

  private async captureAt(key: string, x: HostTensor): Promise<void> {
    const replayer = await this.backend(this.engine, x, this.warmupIters);
    this.graphs.set(key, { replayer, info: { shape: [...x.dims], dtype: x.dtype, device: this.engine.device.id, replays: 0 } });
  }

  /** The explicit path (`capture_graph()`): raises instead of falling back; ignores the cache limit. */
  async capture(x: HostTensor): Promise<void> {
    const reason = captureUnavailableReason(this.engine.device);
    if (reason !== null) throw unavailableError(this.engine.device, reason);
    const key = this.key(x);
    if (this.graphs.has(key)) return;
    if (this.captureFailed) throw new CudaGraphUnavailable(`a previous capture failed for ${this.family}; not retrying (call release_graphs() to reset)`);
    try {
      await this.captureAt(key, x);
    } catch (err) {
      this.captureFailed = true;
      throw new CudaGraphUnavailable(`Graph capture failed for ${this.family} at shape (${x.dims.join(', ')}): ${(err as Error).message}`, err);
    }
    this.precaptured.add(key);
  }

  info(): GraphInfo {
    const captured = [...this.graphs.values()].map((e) => ({ ...e.info, shape: [...e.info.shape] }));
    return {
      family: this.family, captured, graph_count: captured.length, max_graphs: this.maxGraphs,
      eager_fallbacks: this.misses, fallback_reason: this.fallbackReason,
      supported: !this.captureFailed && captureUnavailableReason(this.engine.device) === null,
    };
  }

  /** Frees every graph and resets counters, latches and warnings. */
  async release(): Promise<void> {
    const all = [...this.graphs.values()];
    this.graphs.clear();
    this.seen.clear();
    this.precaptured.clear();
    this.misses = 0;
    this.fallbackReason = null;
    this.captureFailed = false;
    this.warnedLimit = false;
    this.warnedUnused = false;
    for (const e of all) await e.replayer.release().catch(() => undefined);
  }
}
