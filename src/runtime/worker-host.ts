/**
 * Main-thread side of a session worker: request/response by id, tensors moved as transferables.
 * The worker is referenced only while requests are in flight, so an idle model never keeps the
 * process alive, and its sessions die with the process at exit.
 */
import type { Worker } from 'node:worker_threads';
import type { HostTensor, TypedData } from '../graph/tensor.ts';
import type { Request, Response, SessionConfig, SessionInfo, WireTensor } from './protocol.ts';
import { spawnSiblingWorker } from '../util/worker.ts';

type Pending = { resolve: (r: Response & { ok: true }) => void; reject: (e: Error) => void };
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export class WorkerHost {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private dead: Error | null = null;

  constructor() {
    this.worker = spawnSiblingWorker(import.meta.url, 'session-worker');
    this.worker.unref();
    this.worker.on('message', (res: Response) => {
      const p = this.pending.get(res.id);
      if (!p) return;
      this.pending.delete(res.id);
      if (this.pending.size === 0) this.worker.unref();
      if (res.ok) p.resolve(res); else p.reject(new Error(res.error));
    });
    const fail = (err: Error): void => {
      this.dead = err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`session worker exited (code ${code})`)));
  }

  request(msg: DistributiveOmit<Request, 'id'>, transfer: ArrayBuffer[] = []): Promise<Response & { ok: true }> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this.worker.ref();
      this.worker.postMessage({ ...msg, id } as Request, transfer);
    });
  }

  async terminate(): Promise<void> {
    this.dead ??= new Error('model closed');
    await this.worker.terminate();
  }
}

export function toWire(t: HostTensor): WireTensor {
  const d = t.data;
  return { dtype: t.dtype, dims: t.dims, buffer: d.buffer as ArrayBuffer, byteOffset: d.byteOffset, length: d.length };
}

export function fromWire(w: WireTensor): HostTensor {
  const { buffer, byteOffset, length } = w;
  let data: TypedData;
  switch (w.dtype) {
    case 'float32': data = new Float32Array(buffer, byteOffset, length); break;
    case 'float16': case 'bfloat16': data = new Uint16Array(buffer, byteOffset, length); break;
    case 'int64': data = new BigInt64Array(buffer, byteOffset, length); break;
    case 'int32': data = new Int32Array(buffer, byteOffset, length); break;
    case 'float64': data = new Float64Array(buffer, byteOffset, length); break;
    default: data = new Uint8Array(buffer, byteOffset, length);
  }
  return { dtype: w.dtype, dims: w.dims, data };
}

/** One ORT session living in a worker. */
export class WorkerSession {
  constructor(private readonly host: WorkerHost, readonly key: string, readonly info: SessionInfo, readonly profilePrefix?: string) {}

  static async create(host: WorkerHost, key: string, model: Uint8Array | string, config: SessionConfig): Promise<WorkerSession> {
    const res = await host.request({ kind: 'create', key, model, config });
    return new WorkerSession(host, key, res.info!, config.profileFilePrefix);
  }

  /**
   * Runs the session. Input buffers are copied to the worker (not transferred) unless `transfer`
   * is set, so callers may keep using them.
   */
  async run(feeds: Record<string, HostTensor>, transfer = false): Promise<{ outputs: Record<string, HostTensor>; runMs: number; startEpochMs: number }> {
    const wire: Record<string, WireTensor> = {};
    const buffers: ArrayBuffer[] = [];
    for (const [name, t] of Object.entries(feeds)) {
      wire[name] = toWire(t);
      if (transfer) buffers.push(wire[name].buffer);
    }
    const res = await this.host.request({ kind: 'run', key: this.key, feeds: wire }, buffers);
    const outputs: Record<string, HostTensor> = {};
    for (const [name, w] of Object.entries(res.outputs ?? {})) outputs[name] = fromWire(w);
    return { outputs, runMs: res.runMs ?? 0, startEpochMs: res.startEpochMs ?? 0 };
  }

  async endProfiling(): Promise<void> {
    await this.host.request({ kind: 'endProfiling', key: this.key });
  }

  async release(): Promise<void> {
    await this.host.request({ kind: 'release', key: this.key });
  }
}
