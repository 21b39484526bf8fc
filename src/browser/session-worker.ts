/**
 * The browser's session worker: the shared session handler over onnxruntime-web (WASM, and WebGPU
 * where `navigator.gpu` gives an adapter). Built as its own file, `session-worker.js`.
 *
 * onnxruntime-web has no file for a profiling session's events: its endProfiling() prints them on
 * stdout, which its WASM glue binds to console.log when it starts (after this module has run). So
 * console.log is wrapped here first, and while an endProfiling runs its lines are kept (not printed)
 * and sent back with the answer, for the page's profile (browser/profile.ts).
 */
import * as ort from 'onnxruntime-web';
import type { Request, Response } from '../runtime/protocol.ts';
import { sessionHandler, type OrtBinding } from '../runtime/session-handler.ts';
import type { WebInit, WebRuntimeInfo } from './protocol.ts';

interface WorkerScope {
  postMessage(message: unknown, transfer?: Transferable[]): void;
  onmessage: ((ev: MessageEvent<Request | WebInit>) => void) | null;
  crossOriginIsolated: boolean;
}
const scope = self as unknown as WorkerScope;
const handle = sessionHandler(ort as unknown as OrtBinding);

/** WebGPU sessions need an adapter; without one ORT's own error is obscure, so say what is missing. */
async function checkWebGpu(providers: unknown[]): Promise<void> {
  if (!providers.some((p) => p === 'webgpu' || (typeof p === 'object' && p !== null && (p as { name?: string }).name === 'webgpu'))) return;
  const gpu = (navigator as Navigator & { gpu?: { requestAdapter(): Promise<unknown> } }).gpu;
  if (!gpu) throw new Error('this browser has no WebGPU (navigator.gpu is undefined)');
  if (!(await gpu.requestAdapter())) throw new Error('navigator.gpu gives no adapter (WebGPU is off, or no usable GPU)');
}

let captured: string[] | null = null;
const print = console.log.bind(console);
console.log = (...args: unknown[]): void => {
  if (captured && args.length === 1 && typeof args[0] === 'string') captured.push(args[0]);
  else print(...args);
};

/** ORT's profile as printed: a JSON array, one event a line (read line by line if the whole does not parse). */
function profileEvents(lines: string[]): unknown[] {
  try {
    const all: unknown = JSON.parse(lines.join('\n'));
    if (Array.isArray(all)) return all;
  } catch {
    // fall through: a stray line among the events
  }
  const out: unknown[] = [];
  for (const line of lines) {
    const t = line.trim().replace(/,$/, '');
    if (!t.startsWith('{')) continue;
    try {
      out.push(JSON.parse(t));
    } catch {
      // not an event
    }
  }
  return out;
}

async function endProfiling(msg: Request): Promise<{ res: Response; transfer: ArrayBuffer[] }> {
  captured = [];
  try {
    const { res, transfer } = await handle(msg);
    return { res: res.ok ? { ...res, events: profileEvents(captured) } : res, transfer };
  } finally {
    captured = null;
  }
}

let queue: Promise<unknown> = Promise.resolve();

scope.onmessage = (ev) => {
  const msg = ev.data;
  if (msg.kind === 'init') {
    ort.env.wasm.numThreads = msg.numThreads;
    if (msg.wasmPaths) ort.env.wasm.wasmPaths = msg.wasmPaths;
    ort.env.logLevel = 'error';
    const info: WebRuntimeInfo = {
      crossOriginIsolated: scope.crossOriginIsolated, numThreads: ort.env.wasm.numThreads ?? 1,
      wasmPaths: typeof ort.env.wasm.wasmPaths === 'string' ? ort.env.wasm.wasmPaths : null, ortVersion: ort.env.versions.web ?? '',
    };
    scope.postMessage({ kind: 'ready', info });
    return;
  }
  // One request at a time, in order, as Node's worker thread runs them.
  queue = queue.then(async () => {
    if (msg.kind === 'create') await checkWebGpu(msg.config.executionProviders);
    return msg.kind === 'endProfiling' ? endProfiling(msg) : handle(msg);
  }).then(
    ({ res, transfer }) => scope.postMessage(res, [...new Set(transfer)]),
    (err: unknown) => scope.postMessage({ id: msg.id, ok: false, error: err instanceof Error ? err.message : String(err) } satisfies Response),
  );
};
