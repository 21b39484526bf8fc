/**
 * Worker-thread entry of the float64 interpreter: one request (graph, feeds, wanted outputs), one
 * reply with the outputs' buffers transferred. See remote.ts.
 */
import { parentPort } from 'node:worker_threads';
import type { Graph } from '../ir.ts';
import { interpret } from './interpreter.ts';
import type { InterpretRequest, InterpretReply } from './remote.ts';

parentPort!.once('message', (req: InterpretRequest) => {
  let reply: InterpretReply;
  try {
    // A structured clone of a Graph keeps its fields, which is all interpret() reads.
    const outputs = interpret(req.graph as Graph, req.feeds, req.outputs);
    reply = { ok: true, outputs };
  } catch (err) {
    reply = { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  parentPort!.postMessage(reply, reply.ok ? Object.values(reply.outputs).map((t) => t.data.buffer as ArrayBuffer) : []);
});
