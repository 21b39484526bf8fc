/**
 * The body of a session worker, shared by Node's worker thread (onnxruntime-node) and the browser's
 * Web Worker (onnxruntime-web): both bindings implement onnxruntime-common's API, so the worker
 * is given its binding and answers the same requests with it.
 */
import type { InferenceSession, Tensor } from 'onnxruntime-common';
import type { DType } from '../graph/tensor.ts';
import type { Request, Response, WireTensor } from './protocol.ts';

/** What the handler needs of a binding: onnxruntime-node and onnxruntime-web both have it. */
export interface OrtBinding {
  InferenceSession: { create(model: Uint8Array | string, options?: InferenceSession.SessionOptions): Promise<InferenceSession> };
  Tensor: new (type: Tensor.Type, data: Tensor.DataType, dims: readonly number[]) => Tensor;
}

function toOrt(ort: OrtBinding, t: WireTensor): Tensor {
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

function fromOrt(t: Tensor): WireTensor {
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

export type SessionHandler = (msg: Request) => Promise<{ res: Response; transfer: ArrayBuffer[] }>;

/** A request handler owning the sessions it creates with `ort`. */
export function sessionHandler(ort: OrtBinding): SessionHandler {
  const sessions = new Map<string, InferenceSession>();
  return async (msg) => {
    switch (msg.kind) {
      case 'create': {
        const { config } = msg;
        const options: InferenceSession.SessionOptions = {
          executionProviders: config.executionProviders as InferenceSession.ExecutionProviderConfig[],
          intraOpNumThreads: config.intraOpNumThreads,
          interOpNumThreads: 1,
          graphOptimizationLevel: config.graphOptimizationLevel,
          // Spinning intra-op threads would steal the cores the main thread needs for decoding and
          // NMS between runs (and another session's cores), so idle threads sleep.
          extra: withConfigEntries({ session: { intra_op: { allow_spinning: config.allowSpinning ? '1' : '0' } } }, config.configEntries),
          ...(config.profileFilePrefix ? { enableProfiling: true, profileFilePrefix: config.profileFilePrefix } : {}),
          ...(config.logSeverityLevel === undefined ? {} : { logSeverityLevel: config.logSeverityLevel }),
          ...(config.memPattern === false ? { enableMemPattern: false } : {}),
          ...(config.cpuArena === false ? { enableCpuMemArena: false } : {}),
          ...(config.optimizedModelFilePath ? { optimizedModelFilePath: config.optimizedModelFilePath } : {}),
        };
        const startEpochMs = performance.timeOrigin + performance.now();
        const session = await ort.InferenceSession.create(msg.model, options);
        await sessions.get(msg.key)?.release();
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
        const feeds: Record<string, Tensor> = {};
        for (const [name, t] of Object.entries(msg.feeds)) feeds[name] = toOrt(ort, t);
        // What was lent goes back with the answer, a failed run's included: the caller has no other copy.
        const lent = msg.lend ? Object.fromEntries(msg.lend.map((name) => [name, msg.feeds[name]!])) : undefined;
        const transfer = lent ? Object.values(lent).map((w) => w.buffer) : [];
        const startEpochMs = performance.timeOrigin + performance.now();
        const t0 = performance.now();
        let out: InferenceSession.ReturnType;
        try {
          out = await session.run(feeds);
        } catch (err) {
          return { res: { id: msg.id, ok: false, error: err instanceof Error ? err.message : String(err), ...(lent ? { lent } : {}) }, transfer };
        }
        const runMs = performance.now() - t0;
        const outputs: Record<string, WireTensor> = {};
        for (const [name, t] of Object.entries(out)) {
          outputs[name] = fromOrt(t);
          transfer.push(outputs[name].buffer);
        }
        return { res: { id: msg.id, ok: true, outputs, runMs, startEpochMs, ...(lent ? { lent } : {}) }, transfer };
      }
      case 'endProfiling': {
        await sessions.get(msg.key)?.endProfiling();
        return { res: { id: msg.id, ok: true }, transfer: [] };
      }
      case 'release': {
        await sessions.get(msg.key)?.release();
        sessions.delete(msg.key);
        return { res: { id: msg.id, ok: true }, transfer: [] };
      }
    }
  };
}
