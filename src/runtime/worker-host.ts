/**
 * Main-thread side of a session worker: request/response by id, tensors moved as transferables.
 * The worker is referenced only while requests are in flight, so an idle model never keeps the
 * process alive, and its sessions die with the process at exit.
 */
import type { Worker } from 'node:worker_threads';
import type { Request, Response } from './protocol.ts';
import type { DistributiveOmit, SessionTransport } from './worker-session.ts';
import { spawnSiblingWorker } from '../util/worker.ts';

type Pending = { resolve: (r: Response & { ok: true }) => void; reject: (e: Error) => void };

export class WorkerHost implements SessionTransport {
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

export { fromWire, toWire, WorkerSession } from './worker-session.ts';
