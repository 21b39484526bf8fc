/**
 * Sessions as the engine sees them: one ORT session in a worker, reached through a transport (a
 * worker thread in Node, a Web Worker in the browser) that sends requests and answers by id.
 */
import type { HostTensor, TypedData } from '../graph/tensor.ts';
import type { DistributiveOmit, Request, Response, SessionConfig, SessionInfo, WireTensor } from './protocol.ts';
import { WorkerRequestError } from './request-channel.ts';

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

/** Feeds a run borrows instead of copying (see WorkerSession.run), and where they go back to. */
export interface Lending {
  names: readonly string[];
  giveBack(name: string, tensor: HostTensor): void;
}

/** Whether `d` spans its whole buffer (so lending that buffer moves nothing else with it). */
export function ownsBuffer(d: TypedData): boolean {
  return d.byteOffset === 0 && d.byteLength === d.buffer.byteLength;
}

function giveBack(lent: Record<string, WireTensor>, lend: Lending): void {
  for (const name of lend.names) {
    const w = lent[name];
    if (!w) throw new Error(`the session worker did not hand back the lent feed ${name}`);
    lend.giveBack(name, fromWire(w));
  }
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
   * is set, so callers may keep using them. Feeds named in `lend` travel without a copy either way:
   * their buffers move to the worker for the run and come back to `lend.giveBack`, after a failed
   * run too (each must own its whole buffer, so that nothing else is moved with it).
   */
  async run(feeds: Record<string, HostTensor>, transfer = false, lend?: Lending): Promise<{ outputs: Record<string, HostTensor>; runMs: number; startEpochMs: number }> {
    const wire: Record<string, WireTensor> = {};
    const buffers: ArrayBuffer[] = [];
    for (const [name, t] of Object.entries(feeds)) {
      wire[name] = toWire(t);
      if (transfer) buffers.push(wire[name].buffer);
    }
    for (const name of lend?.names ?? []) {
      const d = feeds[name]?.data;
      if (!d) throw new Error(`run ${this.key}: lent feed ${name} is not among the feeds`);
      if (!ownsBuffer(d)) throw new Error(`run ${this.key}: lent feed ${name} is a view into a larger buffer; lend only tensors that own theirs`);
      buffers.push(d.buffer as ArrayBuffer);
    }
    let res: Response & { ok: true };
    try {
      res = await this.host.request({ kind: 'run', key: this.key, feeds: wire, ...(lend ? { lend: [...lend.names] } : {}) }, [...new Set(buffers)]);
    } catch (err) {
      if (err instanceof WorkerRequestError && err.lent) giveBack(err.lent, lend!);
      else if (lend) throw new Error(`${err instanceof Error ? err.message : String(err)} (the ${lend.names.length} tensors lent to it for this run went with it)`);
      throw err;
    }
    if (lend) giveBack(res.lent ?? {}, lend);
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
