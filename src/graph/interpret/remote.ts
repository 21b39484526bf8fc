/**
 * The float64 interpreter on a worker thread: a training graph takes ~20 s, which must not block a
 * server's event loop. One worker per call (its start-up is small next to the work).
 */
import type { Graph } from '../ir.ts';
import type { HostTensor } from '../tensor.ts';
import { spawnSiblingWorker } from '../../util/worker.ts';
import type { F64 } from './array.ts';

export interface InterpretRequest {
  graph: Graph;
  feeds: Record<string, HostTensor>;
  outputs?: string[];
}

export type InterpretReply = { ok: true; outputs: Record<string, F64> } | { ok: false; message: string };

/** `interpret(graph, feeds, outputs)` run on a worker thread. */
export function interpretInWorker(graph: Graph, feeds: Record<string, HostTensor>, outputs?: string[]): Promise<Record<string, F64>> {
  const worker = spawnSiblingWorker(import.meta.url, 'worker');
  return new Promise<Record<string, F64>>((resolve, reject) => {
    worker.once('message', (reply: InterpretReply) => (reply.ok ? resolve(reply.outputs) : reject(new Error(reply.message))));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`float64 interpreter worker exited (code ${code})`)));
    worker.postMessage({ graph, feeds, ...(outputs ? { outputs } : {}) } satisfies InterpretRequest);
  }).finally(() => void worker.terminate());
}
