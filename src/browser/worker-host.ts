/**
 * The browser's session transport (replaces runtime/worker-host.ts in the browser build): a module
 * Web Worker running `session-worker.js` with onnxruntime-web, so a run never blocks the page.
 */
import type { Request, Response } from '../runtime/protocol.ts';
import type { DistributiveOmit, SessionTransport } from '../runtime/worker-session.ts';
import { noteRuntime, runtimeOptions, wasmThreads } from './config.ts';
import type { WebInit, WebRuntimeInfo } from './protocol.ts';

type Pending = { resolve: (r: Response & { ok: true }) => void; reject: (e: Error) => void };

export class WorkerHost implements SessionTransport {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private dead: Error | null = null;
  /** Resolves with the worker's runtime once onnxruntime-web is set up there. */
  readonly ready: Promise<WebRuntimeInfo>;

  constructor() {
    const opts = runtimeOptions();
    this.worker = new Worker(opts.workerUrl ?? new URL('./session-worker.js', import.meta.url), { type: 'module', name: 'libreyolo-session' });
    let onReady!: (info: WebRuntimeInfo) => void;
    this.ready = new Promise((resolve) => (onReady = resolve));
    noteRuntime(this.ready);
    this.worker.onmessage = (ev: MessageEvent<Response | { kind: 'ready'; info: WebRuntimeInfo }>) => {
      const res = ev.data;
      if ('kind' in res) return onReady(res.info);
      const p = this.pending.get(res.id);
      if (!p) return;
      this.pending.delete(res.id);
      if (res.ok) p.resolve(res); else p.reject(new Error(res.error));
    };
    this.worker.onerror = (ev) => {
      this.dead = new Error(`session worker failed: ${ev.message || 'it could not be loaded (check workerUrl)'}`);
      for (const p of this.pending.values()) p.reject(this.dead);
      this.pending.clear();
    };
    const init: WebInit = { kind: 'init', numThreads: wasmThreads(), ...(opts.wasmPaths ? { wasmPaths: opts.wasmPaths } : {}) };
    this.worker.postMessage(init);
  }

  request(msg: DistributiveOmit<Request, 'id'>, transfer: ArrayBuffer[] = []): Promise<Response & { ok: true }> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...msg, id } as Request, transfer);
    });
  }

  async terminate(): Promise<void> {
    this.dead ??= new Error('model closed');
    this.worker.terminate();
  }
}

export { fromWire, toWire, WorkerSession } from '../runtime/worker-session.ts';
