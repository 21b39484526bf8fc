/**
 * Inference engines: what predict calls to turn a stacked `[B,3,H,W]` float32 batch into the
 * network output. A GraphEngine builds its ONNX graph from the IR per input shape (BN folded, decode
 * in-graph); an OnnxFileEngine runs an exported file. Both keep one session per
 * (device, dtype, shape) in a worker thread, created on first use and released on close().
 */
import type { Graph } from '../graph/ir.ts';
import { serializeModel } from '../graph/onnx.ts';
import { convertPrecision, floatOpsOf, kernelProbeGraph, type HalfType, type PrecisionSummary } from '../graph/passes/precision.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { f32ToF16Array, f16ToF32Array } from '../graph/tensor.ts';
import { LibreYOLOError } from '../errors.ts';
import { deviceUnavailable, executionProviders, type Device } from './device.ts';
import { ensureDeviceQuietly } from './device-probe.ts';
import type { SessionConfig } from './protocol.ts';
import { cpuCount, onProcessExit } from '../util/platform.ts';
import { WorkerHost } from './worker-host.ts';
import { WorkerSession } from './worker-session.ts';

export interface EngineOptions {
  device: Device;
  /** ORT intra-op threads; default: all cores. */
  threads?: number;
  /** Directory+prefix for ORT profile files; set to profile every session this engine creates. */
  profileFilePrefix?: string;
  /** Compute precision of the sessions (quantize): float32 (default), float16 or bfloat16. */
  precision?: 'float32' | HalfType;
  /** Node-name fragments that stay float32 when the precision is half (the family's keep-float list). */
  keepFloat?: readonly string[];
  /** ORT session config entries for every session (the family's `sessionConfig`). */
  configEntries?: Readonly<Record<string, string>>;
}

/** The precision pass's region for a keep-float list: nodes whose name contains a fragment stay float32. */
export function keepFloatRegion(keepFloat: readonly string[] | undefined): ((node: { name: string }) => boolean) | undefined {
  if (!keepFloat?.length) return undefined;
  return (node) => !keepFloat.some((fragment) => node.name.includes(fragment));
}

/** What the engine builds for one input shape: a session key, the declared input type, the model. */
export interface ModelSpec {
  key: string;
  inputType: 'float32' | 'float16';
  build: () => Uint8Array | string | Promise<Uint8Array | string>;
}

export interface ForwardResult {
  output: HostTensor;
  extra: Record<string, HostTensor>;
  runMs: number;
  startEpochMs: number;
  /** Milliseconds this call spent building and creating its session (0 when it already existed). */
  loadMs?: number;
}

export interface DedicatedSession {
  run(images: HostTensor): Promise<ForwardResult>;
  endProfiling(): Promise<void>;
  release(): Promise<void>;
}

/** One run: float32 in (cast to the session's declared input type), the `output` tensor as float32 out. */
async function runSession(session: WorkerSession, inputType: 'float32' | 'float16', images: HostTensor, transfer: boolean): Promise<ForwardResult> {
  // An fp16 model declares float16 inputs: cast at the boundary so callers always pass float32.
  const feed: HostTensor = inputType === 'float16' && images.dtype === 'float32'
    ? { dtype: 'float16', dims: images.dims, data: f32ToF16Array(images.data as Float32Array) }
    : images;
  const inputName = session.info.inputNames[0]!;
  const { outputs, runMs, startEpochMs } = await session.run({ [inputName]: feed }, transfer || feed !== images);
  const outName = session.info.outputNames.includes('output') ? 'output' : session.info.outputNames[0]!;
  let output = outputs[outName]!;
  if (output.dtype === 'float16') output = { dtype: 'float32', dims: output.dims, data: f16ToF32Array(output.data as Uint16Array) };
  const extra = Object.fromEntries(Object.entries(outputs).filter(([k]) => k !== outName));
  return { output, extra, runMs, startEpochMs };
}

/** Every live engine, so sessions are released at process exit even if close() was forgotten. */
const liveEngines = new Set<SessionEngine>();
let exitHookInstalled = false;

export abstract class SessionEngine {
  private host: WorkerHost | null = null;
  private readonly sessions = new Map<string, Promise<WorkerSession>>();
  protected options: EngineOptions;
  private profileCount = 0;
  private probeCount = 0;
  /** Half-kernel availability per `device|dtype|op`, asked of the runtime once. */
  private readonly kernels = new Map<string, Promise<boolean>>();
  /** What the precision pass did to the most recently built graph (null at float32). */
  lastPrecision: PrecisionSummary | null = null;

  constructor(options: EngineOptions) {
    this.options = options;
    liveEngines.add(this);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      onProcessExit(() => { for (const e of liveEngines) void e.close(); });
    }
  }

  get device(): Device {
    return this.options.device;
  }

  /**
   * The session key for input `dims`, the input dtype it declares, and a builder for the model
   * bytes (called only when no session exists yet for that key).
   */
  protected abstract modelFor(dims: number[]): ModelSpec;

  /** A new engine over the same model and settings, with `options` overridden (sessions not shared). */
  abstract fork(options: Partial<EngineOptions>): SessionEngine;

  get precision(): 'float32' | HalfType {
    return this.options.precision ?? 'float32';
  }

  /** Switches the compute precision; existing sessions are released and rebuilt on next use. */
  async setPrecision(precision: 'float32' | HalfType): Promise<void> {
    await this.releaseSessions();
    this.options = { ...this.options, precision };
    this.lastPrecision = null;
  }

  /**
   * Applies the engine's precision to a float32 graph, keeping float32 IO. Ops are asked of the
   * runtime one by one (a one-node session per op type at `opset`): those without a half kernel on
   * this device stay float32 islands. Exports of quantized models use it too, so a file holds what runs.
   */
  async convertGraph(graph: Graph, opset: number): Promise<Graph> {
    const dtype = this.precision;
    if (dtype === 'float32') return graph;
    const supported = new Set<string>();
    await Promise.all(floatOpsOf(graph).map(async (node) => {
      const key = `${this.options.device.id}|${dtype}|${node.op}`;
      let ok = this.kernels.get(key);
      if (!ok) {
        ok = this.canCreate(serializeModel(kernelProbeGraph(graph, node, dtype), { opset }));
        this.kernels.set(key, ok);
      }
      if (await ok) supported.add(node.op);
    }));
    const region = keepFloatRegion(this.options.keepFloat);
    this.lastPrecision = convertPrecision(graph, { dtype, keepIO: true, hasKernel: (op) => supported.has(op), ...(region ? { region } : {}) });
    return graph;
  }

  /** Whether the runtime can create a session for `model` on this device (a kernel probe). */
  async canCreate(model: Uint8Array): Promise<boolean> {
    this.host ??= new WorkerHost();
    const key = `probe|${this.probeCount++}`;
    try {
      const { profileFilePrefix: _, ...config } = this.config();
      const s = await WorkerSession.create(this.host, key, model, { ...config, intraOpNumThreads: 1, logSeverityLevel: 3 });
      await s.release();
      return true;
    } catch {
      return false;
    }
  }

  /** Sessions created so far, keyed `device|dtype|shape`. */
  sessionKeys(): string[] {
    return [...this.sessions.keys()];
  }

  protected config(): SessionConfig {
    const profile = this.options.profileFilePrefix;
    return {
      executionProviders: executionProviders(this.options.device),
      intraOpNumThreads: this.options.threads ?? cpuCount(),
      graphOptimizationLevel: 'all',
      ...(this.options.configEntries ? { configEntries: { ...this.options.configEntries } } : {}),
      ...(profile ? { profileFilePrefix: `${profile}_s${this.profileCount++}` } : {}),
    };
  }

  async session(dims: number[]): Promise<{ session: WorkerSession; inputType: 'float32' | 'float16'; loadMs: number }> {
    const { build, key, inputType } = this.modelFor(dims);
    const cacheKey = `${this.options.device.id}|${key}`;
    const cached = this.sessions.get(cacheKey);
    if (cached) return { session: await cached, inputType, loadMs: 0 };
    const t0 = performance.now();
    const host = this.host ??= new WorkerHost();
    const config = this.config();
    const device = this.options.device;
    // WebGPU is asked in a child first: its native layers print on stderr when there is no adapter.
    const ready = device.kind === 'webgpu' ? ensureDeviceQuietly(device) : Promise.resolve();
    const s = ready.then(build).then((model) => WorkerSession.create(host, cacheKey, model, config)).catch((err: unknown) => {
      this.sessions.delete(cacheKey);
      if (err instanceof LibreYOLOError) throw err;
      if (device.kind !== 'cpu') throw deviceUnavailable(device, err);
      throw err;
    });
    this.sessions.set(cacheKey, s);
    return { session: await s, inputType, loadMs: performance.now() - t0 };
  }

  /**
   * Runs the network on `images` (float32 `[B,3,H,W]`). With `transfer`, the input buffer moves to
   * the worker instead of being copied (the caller must not use it afterwards).
   */
  async forward(images: HostTensor, options: { transfer?: boolean } = {}): Promise<ForwardResult> {
    // Session creation is the model's load, reported apart so the first forward reads as a forward.
    const { session, inputType, loadMs } = await this.session(images.dims);
    return { ...(await runSession(session, inputType, images, options.transfer === true)), loadMs };
  }

  /**
   * A session outside the per-shape cache, built for `dims` with extra settings (graph capture uses
   * it); the caller releases it. It runs exactly like `forward`.
   */
  async dedicatedSession(dims: number[], extra: Partial<SessionConfig>): Promise<DedicatedSession> {
    const { build, key, inputType } = this.modelFor(dims);
    const host = this.host ??= new WorkerHost();
    const sessionKey = `dedicated|${this.probeCount++}|${this.options.device.id}|${key}`;
    let session: WorkerSession;
    try {
      if (this.options.device.kind === 'webgpu') await ensureDeviceQuietly(this.options.device);
      session = await WorkerSession.create(host, sessionKey, await build(), { ...this.config(), ...extra });
    } catch (err) {
      if (err instanceof LibreYOLOError) throw err;
      if (this.options.device.kind !== 'cpu') throw deviceUnavailable(this.options.device, err);
      throw err;
    }
    return {
      run: (images) => runSession(session, inputType, images, false),
      endProfiling: async () => void (await session.endProfiling()),
      release: () => session.release(),
    };
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

  /**
   * Ends profiling in all sessions: in Node ORT writes its files then; in a page the events come
   * back, returned by session key.
   */
  async endProfiling(): Promise<Map<string, unknown[]>> {
    const events = new Map<string, unknown[]>();
    for (const p of this.sessions.values()) {
      const s = await p;
      const got = await s.endProfiling();
      if (got) events.set(s.key, got);
    }
    return events;
  }

  /** Whether a `[batch, ...]` input can run at all (a static exported file fixes its batch). */
  acceptsBatch(_batch: number): boolean {
    return true;
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
