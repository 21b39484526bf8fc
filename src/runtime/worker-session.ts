/**
 * Sessions as the engine sees them: one ORT session in a worker, reached through a transport (a
 * worker thread in Node, a Web Worker in the browser) that sends requests and answers by id.
 */
import type { HostTensor, TypedData } from '../graph/tensor.ts';
import type { Request, Response, SessionConfig, SessionInfo, WireTensor } from './protocol.ts';

export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A worker that owns sessions: requests go out with transferable buffers, answers come back by id. */
export interface SessionTransport {
  request(msg: DistributiveOmit<Request, 'id'>, transfer?: ArrayBuffer[]): Promise<Response & { ok: true }>;
  terminate(): Promise<void>;
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
  constructor(private readonly host: SessionTransport, readonly key: string, readonly info: SessionInfo, readonly profilePrefix?: string) {}

  static async create(host: SessionTransport, key: string, model: Uint8Array | string, config: SessionConfig): Promise<WorkerSession> {
    const res = await host.request({ kind: 'create', key, model, config });
    return new WorkerSession(host, key, res.info!, config.profileFilePrefix);
  }

  /**
   * Runs the session. Input buffers are copied to the worker (not transferred) unless `transfer`
   * is set, so callers may keep using them. `share.keep` names feeds the worker keeps for later
   * runs of its sessions; `share.reuse` names kept feeds this run takes instead of being sent them.
   */
  async run(feeds: Record<string, HostTensor>, transfer = false, share: { keep?: string[]; reuse?: string[] } = {}): Promise<{ outputs: Record<string, HostTensor>; runMs: number; startEpochMs: number }> {
    const wire: Record<string, WireTensor> = {};
    const buffers: ArrayBuffer[] = [];
    for (const [name, t] of Object.entries(feeds)) {
      wire[name] = toWire(t);
      if (transfer) buffers.push(wire[name].buffer);
    }
    const res = await this.host.request({ kind: 'run', key: this.key, feeds: wire, ...(share.keep ? { keep: share.keep } : {}), ...(share.reuse ? { reuse: share.reuse } : {}) }, buffers);
    const outputs: Record<string, HostTensor> = {};
    for (const [name, w] of Object.entries(res.outputs ?? {})) outputs[name] = fromWire(w);
    return { outputs, runMs: res.runMs ?? 0, startEpochMs: res.startEpochMs ?? 0 };
  }

  /** Ends ORT's profiling; its events when the worker hands them back (the browser's), else undefined (Node's are in ORT's file). */
  async endProfiling(): Promise<unknown[] | undefined> {
    return (await this.host.request({ kind: 'endProfiling', key: this.key })).events;
  }

  async release(): Promise<void> {
    await this.host.request({ kind: 'release', key: this.key });
  }
}
