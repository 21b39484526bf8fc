/**
 * Main-thread side of a session worker: request/response by id, tensors moved as transferables.
 * The worker is referenced only while requests are in flight, so an idle model never keeps the
 * process alive, and its sessions die with the process at exit.
 */
import type { Worker } from 'node:worker_threads';
import type { DistributiveOmit, Request, Response } from './protocol.ts';
import { RequestChannel } from './request-channel.ts';
import type { SessionTransport } from './worker-session.ts';
import { spawnSiblingWorker } from '../util/worker.ts';

export class WorkerHost implements SessionTransport {
  private readonly worker: Worker;
  private readonly channel: RequestChannel;

  constructor() {
    const worker = this.worker = spawnSiblingWorker(import.meta.url, 'session-worker');
    worker.unref();
    this.channel = new RequestChannel((msg, transfer) => worker.postMessage(msg, transfer), (busy) => (busy ? worker.ref() : worker.unref()));
    worker.on('message', (res: Response) => this.channel.settle(res));
    worker.on('error', (err) => this.channel.fail(err));
    worker.on('exit', (code) => this.channel.fail(new Error(`session worker exited (code ${code})`)));
  }

  request(msg: DistributiveOmit<Request, 'id'>, transfer: ArrayBuffer[] = []): Promise<Response & { ok: true }> {
    return this.channel.request(msg, transfer);
  }

  async terminate(): Promise<void> {
    this.channel.fail(new Error('model closed'));
    await this.worker.terminate();
  }
}

export { fromWire, toWire, WorkerSession } from './worker-session.ts';
