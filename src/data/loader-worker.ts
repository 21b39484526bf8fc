/** Data loader worker thread: receives the sample context once, then builds batches on request. */
import { parentPort } from 'node:worker_threads';
import { LibreYOLOError } from '../errors.ts';
import { buildBatch, type SampleContext, type WorkerReply, type WorkerRequest } from './loader.ts';

let ctx: SampleContext | null = null;

parentPort!.on('message', (msg: WorkerRequest) => {
  if (msg.type === 'init') { ctx = msg.ctx; return; }
  const { id, job } = msg;
  buildBatch(ctx!, job, true).then(
    (data) => {
      const reply: WorkerReply = { id, ok: true, data };
      parentPort!.postMessage(reply); // shared buffers: nothing is copied or detached
    },
    (err: unknown) => {
      const reply: WorkerReply = {
        id, ok: false,
        code: err instanceof LibreYOLOError ? err.code : null,
        message: err instanceof Error ? err.message : String(err),
      };
      parentPort!.postMessage(reply);
    },
  );
});
