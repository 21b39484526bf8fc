/** The browser session worker's own messages, besides the shared session protocol (runtime/protocol.ts). */

/** Sent once, before any session: how onnxruntime-web is set up in the worker. */
export interface WebInit {
  kind: 'init';
  /** Where onnxruntime-web's .wasm/.mjs files are (a URL prefix ending in /); default: beside the worker script. */
  wasmPaths?: string;
  /** WASM threads: 1 when the page is not cross-origin isolated. */
  numThreads: number;
}

/** What the worker reports about its runtime after init (the browser tests read it). */
export interface WebRuntimeInfo {
  crossOriginIsolated: boolean;
  /** onnxruntime-web's env.wasm.numThreads after init. */
  numThreads: number;
  wasmPaths: string | null;
  ortVersion: string;
}
