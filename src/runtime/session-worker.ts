/**
 * Worker thread that owns ONNX Runtime sessions. onnxruntime-node's run() blocks its thread for the
 * whole inference, so sessions live here and the main thread stays free to decode, letterbox, run
 * NMS and draw progress while the network runs.
 */
import { parentPort } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import type { Response } from './protocol.ts';
import { sessionHandler } from './session-handler.ts';

if (!parentPort) throw new Error('session-worker must run as a worker thread');
const port = parentPort;
// ORT's native logger writes to stderr on its own, before the error it also throws (a missing CUDA
// provider prints a provider_bridge_ort.cc line ahead of our message): errors reach the user as
// exceptions, so the log shows only fatal ones unless LIBREYOLO_DEBUG asks for ORT's warnings.
ort.env.logLevel = process.env.LIBREYOLO_DEBUG ? 'warning' : 'fatal';
const handle = sessionHandler(ort);

port.on('message', (msg) => {
  handle(msg).then(
    ({ res, transfer }) => port.postMessage(res, [...new Set(transfer)]),
    (err: unknown) => port.postMessage({ id: msg.id, ok: false, error: err instanceof Error ? err.message : String(err) } satisfies Response),
  );
});
