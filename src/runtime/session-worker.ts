/**
 * Worker thread that owns ONNX Runtime sessions. onnxruntime-node's run() blocks its thread for the
 * whole inference, so sessions live here and the main thread stays free to decode, letterbox, run
 * NMS and draw progress while the network runs.
 */
import { parentPort } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import * as ort from 'onnxruntime-node';
import type { Request, Response, WireTensor } from './protocol.ts';
import type { DType } from '../graph/tensor.ts';

if (!parentPort) throw new Error('session-worker must run as a worker thread');
const port = parentPort;
// ORT's native logger writes to stderr on its own, before the error it also throws (a missing CUDA
// provider prints a provider_bridge_ort.cc line ahead of our message): errors reach the user as
// exceptions, so the log shows only fatal ones unless LIBREYOLO_DEBUG asks for ORT's warnings.
ort.env.logLevel = process.env.LIBREYOLO_DEBUG ? 'warning' : 'fatal';
const sessions = new Map<string, ort.InferenceSession>();

function toOrt(t: WireTensor): ort.Tensor {
  const { dtype, dims, buffer, byteOffset, length } = t;
  switch (dtype) {
    case 'float32': return new ort.Tensor('float32', new Float32Array(buffer, byteOffset, length), dims);
    case 'float16': return new ort.Tensor('float16', new Uint16Array(buffer, byteOffset, length), dims);
    case 'int64': return new ort.Tensor('int64', new BigInt64Array(buffer, byteOffset, length), dims);
    case 'int32': return new ort.Tensor('int32', new Int32Array(buffer, byteOffset, length), dims);
    case 'uint8': return new ort.Tensor('uint8', new Uint8Array(buffer, byteOffset, length), dims);
    case 'bool': return new ort.Tensor('bool', new Uint8Array(buffer, byteOffset, length), dims);
    default: throw new Error(`unsupported input dtype ${dtype}`);
  }
}

function fromOrt(t: ort.Tensor): WireTensor {
  const data = t.data as ArrayBufferView & { length: number };
  return { dtype: t.type as DType, dims: [...t.dims], buffer: data.buffer as ArrayBuffer, byteOffset: data.byteOffset, length: data.length };
}

type ConfigTree = { [key: string]: string | ConfigTree };

/** Nests dotted session-config keys the way the binding's `extra` option expects them. */
function withConfigEntries(tree: ConfigTree, entries: Record<string, string> | undefined): ConfigTree {
  for (const [key, value] of Object.entries(entries ?? {})) {
    const parts = key.split('.');
    let node = tree;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as ConfigTree;
    node[parts[parts.length - 1]!] = value;
  }
  return tree;
}

async function handle(msg: Request): Promise<{ res: Response; transfer: ArrayBuffer[] }> {
  switch (msg.kind) {
    case 'create': {
      const { config } = msg;
      const options: ort.InferenceSession.SessionOptions = {
        executionProviders: config.executionProviders as ort.InferenceSession.ExecutionProviderConfig[],
        intraOpNumThreads: config.intraOpNumThreads,
        interOpNumThreads: 1,
        graphOptimizationLevel: config.graphOptimizationLevel,
        // Spinning intra-op threads would steal the cores the main thread needs for decoding and
        // NMS between runs (and another session's cores), so idle threads sleep.
        extra: withConfigEntries({ session: { intra_op: { allow_spinning: config.allowSpinning ? '1' : '0' } } }, config.configEntries),
        ...(config.profileFilePrefix ? { enableProfiling: true, profileFilePrefix: config.profileFilePrefix } : {}),
        ...(config.logSeverityLevel === undefined ? {} : { logSeverityLevel: config.logSeverityLevel }),
      };
      const startEpochMs = performance.timeOrigin + performance.now();
      const session = typeof msg.model === 'string'
        ? await ort.InferenceSession.create(msg.model, options)
        : await ort.InferenceSession.create(msg.model, options);
      sessions.get(msg.key)?.release();
      sessions.set(msg.key, session);
      const inputTypes: Record<string, string> = {};
      for (const m of session.inputMetadata) if (m.isTensor) inputTypes[m.name] = m.type;
      return {
        res: { id: msg.id, ok: true, info: { inputNames: [...session.inputNames], outputNames: [...session.outputNames], inputTypes, profileStartEpochMs: startEpochMs } },
        transfer: [],
      };
    }
    case 'run': {
      const session = sessions.get(msg.key);
      if (!session) throw new Error(`no session ${msg.key}`);
      const feeds: Record<string, ort.Tensor> = {};
      for (const [name, t] of Object.entries(msg.feeds)) feeds[name] = toOrt(t);
      const startEpochMs = performance.timeOrigin + performance.now();
      const t0 = performance.now();
      const out = await session.run(feeds);
      const runMs = performance.now() - t0;
      const outputs: Record<string, WireTensor> = {};
      const transfer: ArrayBuffer[] = [];
      for (const [name, t] of Object.entries(out)) {
        outputs[name] = fromOrt(t);
        transfer.push(outputs[name].buffer);
      }
      return { res: { id: msg.id, ok: true, outputs, runMs, startEpochMs }, transfer };
    }
    case 'endProfiling': {
      sessions.get(msg.key)?.endProfiling();
      return { res: { id: msg.id, ok: true }, transfer: [] };
    }
    case 'release': {
      await sessions.get(msg.key)?.release();
      sessions.delete(msg.key);
      return { res: { id: msg.id, ok: true }, transfer: [] };
    }
  }
}

port.on('message', (msg: Request) => {
  handle(msg).then(
    ({ res, transfer }) => port.postMessage(res, [...new Set(transfer)]),
    (err: unknown) => port.postMessage({ id: msg.id, ok: false, error: err instanceof Error ? err.message : String(err) } satisfies Response),
  );
});
