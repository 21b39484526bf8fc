/**
 * The page/main-thread side of a session worker's request/response protocol, whatever carries the
 * messages (a Node worker thread or a Web Worker): ids, the requests in flight, and the error every
 * one of them gets once the worker is gone.
 */
import type { DistributiveOmit, Request, Response, WireTensor } from './protocol.ts';

type Pending = { resolve: (r: Response & { ok: true }) => void; reject: (e: Error) => void };

/** A request the worker answered with an error; `lent` holds the feeds a failed run hands back. */
export class WorkerRequestError extends Error {
  constructor(message: string, readonly lent?: Record<string, WireTensor>) {
    super(message);
  }
}

export class RequestChannel {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private dead: Error | null = null;

  constructor(
    private readonly post: (msg: Request, transfer: ArrayBuffer[]) => void,
    /** Told when the first request goes out and when the last answer comes back (Node refs its worker only while busy). */
    private readonly busy: (busy: boolean) => void = () => {},
  ) {}

  request(msg: DistributiveOmit<Request, 'id'>, transfer: ArrayBuffer[] = []): Promise<Response & { ok: true }> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this.busy(true);
      this.post({ ...msg, id } as Request, transfer);
    });
  }

  /** A response from the worker settles its request. */
  settle(res: Response): void {
    const p = this.pending.get(res.id);
    if (!p) return;
    this.pending.delete(res.id);
    if (this.pending.size === 0) this.busy(false);
    if (res.ok) p.resolve(res); else p.reject(new WorkerRequestError(res.error, res.lent));
  }

  /** The worker is gone: every request in flight, and every later one, fails with `err` (the first reason given stays). */
  fail(err: Error): void {
    this.dead ??= err;
    for (const p of this.pending.values()) p.reject(this.dead);
    this.pending.clear();
  }
}
