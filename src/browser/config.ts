/**
 * Page-wide runtime settings of the browser build: where the session worker script and
 * onnxruntime-web's WASM files are served from, and the WASM thread count. Set them with
 * `configureRuntime()` before the first model loads.
 */
import type { WebRuntimeInfo } from './protocol.ts';

export interface RuntimeOptions {
  /** URL prefix (ending in /) of onnxruntime-web's `ort-wasm-simd-threaded.jsep.{mjs,wasm}`; default: beside the worker script. */
  wasmPaths?: string;
  /** URL of `session-worker.js`; default: beside the libreyolo bundle. */
  workerUrl?: string | URL;
  /** WASM threads when the page is cross-origin isolated (default: the browser's core count, at most 8). */
  threads?: number;
}

let options: RuntimeOptions = {};

export function configureRuntime(next: RuntimeOptions): void {
  options = { ...options, ...next };
}

export function runtimeOptions(): Readonly<RuntimeOptions> {
  return options;
}

let lastReady: Promise<WebRuntimeInfo> | null = null;

/** Called by each session worker host as it starts: what its runtime reports once set up. */
export function noteRuntime(ready: Promise<WebRuntimeInfo>): void {
  lastReady = ready;
}

/** How onnxruntime-web runs in the most recently started session worker (isolation, WASM threads); null before any. */
export function runtimeInfo(): Promise<WebRuntimeInfo> | null {
  return lastReady;
}

let toldSingleThreaded = false;

/**
 * WASM threads need SharedArrayBuffer, which a page has only when cross-origin isolated (served with
 * COOP: same-origin and COEP: require-corp): otherwise ONNX Runtime runs on one thread, said once.
 */
export function wasmThreads(): number {
  if (!globalThis.crossOriginIsolated) {
    if (!toldSingleThreaded) {
      toldSingleThreaded = true;
      console.warn('libreyolo: this page is not cross-origin isolated, so ONNX Runtime WASM runs single-threaded. '
        + 'Serve it with the headers Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp for WASM threads.');
    }
    return 1;
  }
  return Math.max(1, Math.min(8, options.threads ?? navigator.hardwareConcurrency ?? 1));
}
