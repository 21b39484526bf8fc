/**
 * The browser's session transport (replaces runtime/worker-host.ts in the browser build): a module
 * Web Worker running `session-worker.js` with onnxruntime-web, so a run never blocks the page.
 */
import type { DistributiveOmit, Request, Response } from '../runtime/protocol.ts';
import { RequestChannel } from '../runtime/request-channel.ts';
import type { SessionTransport } from '../runtime/worker-session.ts';
import { noteRuntime, runtimeOptions, wasmThreads } from './config.ts';
import type { WebInit, WebRuntimeInfo } from './protocol.ts';

export class WorkerHost implements SessionTransport {
  private readonly worker: Worker;
  private readonly channel: RequestChannel;
  /** Resolves with the worker's runtime once onnxruntime-web is set up there. */
  readonly ready: Promise<WebRuntimeInfo>;

  constructor() {
    const opts = runtimeOptions();
    const worker = this.worker = new Worker(opts.workerUrl ?? new URL('./session-worker.js', import.meta.url), { type: 'module', name: 'libreyolo-session' });
    this.channel = new RequestChannel((msg, transfer) => worker.postMessage(msg, transfer));
    let onReady!: (info: WebRuntimeInfo) => void;
    this.ready = new Promise((resolve) => (onReady = resolve));
    noteRuntime(this.ready);
    worker.onmessage = (ev: MessageEvent<Response | { kind: 'ready'; info: WebRuntimeInfo }>) => {
      const res = ev.data;
      if ('kind' in res) onReady(res.info);
      else this.channel.settle(res);
    };
    worker.onerror = (ev) => this.channel.fail(new Error(`session worker failed: ${ev.message || 'it could not be loaded (check workerUrl)'}`));
    const init: WebInit = { kind: 'init', numThreads: wasmThreads(), ...(opts.wasmPaths ? { wasmPaths: opts.wasmPaths } : {}) };
    worker.postMessage(init);
  }

  request(msg: DistributiveOmit<Request, 'id'>, transfer: ArrayBuffer[] = []): Promise<Response & { ok: true }> {
    return this.channel.request(msg, transfer);
  }

  async terminate(): Promise<void> {
    this.channel.fail(new Error('model closed'));
    this.worker.terminate();
  }
}

export { fromWire, toWire, WorkerSession } from '../runtime/worker-session.ts';
