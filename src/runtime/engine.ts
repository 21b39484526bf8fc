/**
 * Inference engines: what predict calls to turn a stacked `[B,3,H,W]` float32 batch into the
 * network output. A GraphEngine builds its ONNX graph from the IR per input shape (BN folded, decode
 * in-graph); an OnnxFileEngine runs an exported file. Both keep one session per
 * (device, dtype, shape) in a worker thread, created on first use and released on close().
 */
import { cpus } from 'node:os';
import type { HostTensor } from '../graph/tensor.ts';
import { f32ToF16Array, f16ToF32Array } from '../graph/tensor.ts';
import { deviceUnavailable, executionProviders, type Device } from './device.ts';
import type { SessionConfig } from './protocol.ts';
import { WorkerHost, WorkerSession } from './worker-host.ts';

export interface EngineOptions {
  device: Device;
  /** ORT intra-op threads; default: all cores. */
  threads?: number;
  /** Directory+prefix for ORT profile files; set to profile every session this engine creates. */
  profileFilePrefix?: string;
}

export interface ForwardResult {
  output: HostTensor;
  extra: Record<string, HostTensor>;
  runMs: number;
  startEpochMs: number;
}

/** Every live engine, so sessions are released at process exit even if close() was forgotten. */
const liveEngines = new Set<SessionEngine>();
let exitHookInstalled = false;

export abstract class SessionEngine {
  private host: WorkerHost | null = null;
  private readonly sessions = new Map<string, Promise<WorkerSession>>();
  protected options: EngineOptions;
  private profileCount = 0;

  constructor(options: EngineOptions) {
    this.options = options;
    liveEngines.add(this);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.once('exit', () => { for (const e of liveEngines) void e.close(); });
    }
  }

  get device(): Device {
    return this.options.device;
  }

  /**
   * The session key for input `dims`, the input dtype it declares, and a builder for the model
   * bytes (called only when no session exists yet for that key).
   */
  protected abstract modelFor(dims: number[]): { key: string; inputType: 'float32' | 'float16'; build: () => Uint8Array | string };

  /** Sessions created so far, keyed `device|dtype|shape`. */
  sessionKeys(): string[] {
    return [...this.sessions.keys()];
  }

  private config(): SessionConfig {
    const profile = this.options.profileFilePrefix;
    return {
      executionProviders: executionProviders(this.options.device),
      intraOpNumThreads: this.options.threads ?? Math.max(1, cpus().length),
      graphOptimizationLevel: 'all',
      ...(profile ? { profileFilePrefix: `${profile}_s${this.profileCount++}` } : {}),
    };
  }

  async session(dims: number[]): Promise<{ session: WorkerSession; inputType: 'float32' | 'float16' }> {
    const { build, key, inputType } = this.modelFor(dims);
    const cacheKey = `${this.options.device.id}|${key}`;
    let s = this.sessions.get(cacheKey);
    if (!s) {
      this.host ??= new WorkerHost();
      s = WorkerSession.create(this.host, cacheKey, build(), this.config()).catch((err: unknown) => {
        this.sessions.delete(cacheKey);
        if (this.options.device.kind !== 'cpu') throw deviceUnavailable(this.options.device, err);
        throw err;
      });
      this.sessions.set(cacheKey, s);
    }
    return { session: await s, inputType };
  }

  async forward(images: HostTensor): Promise<ForwardResult> {
    const { session, inputType } = await this.session(images.dims);
    // An fp16 model declares float16 inputs: cast at the boundary so callers always pass float32.
    const feed: HostTensor = inputType === 'float16' && images.dtype === 'float32'
      ? { dtype: 'float16', dims: images.dims, data: f32ToF16Array(images.data as Float32Array) }
      : images;
    const inputName = session.info.inputNames[0]!;
    const { outputs, runMs, startEpochMs } = await session.run({ [inputName]: feed });
    const outName = session.info.outputNames.includes('output') ? 'output' : session.info.outputNames[0]!;
    let output = outputs[outName]!;
    if (output.dtype === 'float16') output = { dtype: 'float32', dims: output.dims, data: f16ToF32Array(output.data as Uint16Array) };
    const extra = Object.fromEntries(Object.entries(outputs).filter(([k]) => k !== outName));
    return { output, extra, runMs, startEpochMs };
  }

  /** Moves to another device: sessions are recreated there on next use, old ones released. */
  async moveTo(device: Device): Promise<void> {
    if (device.id === this.options.device.id) return;
    await this.releaseSessions();
    this.options = { ...this.options, device };
  }

  /** Turns ORT profiling on/off for sessions created from now on (existing ones are released). */
  async setProfiling(prefix: string | undefined): Promise<void> {
    await this.releaseSessions();
    this.options = { ...this.options, ...(prefix ? { profileFilePrefix: prefix } : {}) };
    if (!prefix) delete this.options.profileFilePrefix;
  }

  /** Profiled sessions so far: ORT's file prefix and when its profiler started (epoch ms). */
  profiledSessions(): Promise<Array<{ key: string; profilePrefix: string; startEpochMs: number }>> {
    return Promise.all([...this.sessions.values()].map(async (p) => {
      const s = await p;
      return { key: s.key, profilePrefix: s.profilePrefix ?? '', startEpochMs: s.info.profileStartEpochMs ?? 0 };
    })).then((all) => all.filter((s) => s.profilePrefix));
  }

  /** Flushes ORT profile files of all sessions (ORT writes them on endProfiling). */
  async endProfiling(): Promise<void> {
    for (const s of this.sessions.values()) await (await s).endProfiling();
  }

  async releaseSessions(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    for (const s of all) {
      try {
        await (await s).release();
      } catch {
        // A session that failed to create has nothing to release.
      }
    }
  }

  async close(): Promise<void> {
    liveEngines.delete(this);
    this.sessions.clear();
    const host = this.host;
    this.host = null;
    await host?.terminate();
  }
}
