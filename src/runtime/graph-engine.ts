/** Engines over the two kinds of model: an IR network (graph built per input shape) and an ONNX file. */
import { GraphBuilder } from '../graph/builder.ts';
import type { Graph } from '../graph/ir.ts';
import { deserializeModel, serializeModel, summarizeModel } from '../graph/onnx.ts';
import { foldBatchNorm } from '../graph/passes/fold-batchnorm.ts';
import { fuseParallelConvs } from '../graph/passes/fuse-parallel-convs.ts';
import type { DetectionNetwork } from '../models/registry.ts';
import { SessionEngine, type EngineOptions, type ModelSpec } from './engine.ts';

/** Opset of the graphs built for sessions (exports choose their own). */
const SESSION_OPSET = 17;

/** The optimised inference graph of a network for one static input shape. */
export function buildInferenceGraph(network: DetectionNetwork, opts: { batch: number | null; height: number | null; width: number | null; rawOutputs?: boolean; optimize?: boolean }): Graph {
  const b = new GraphBuilder('libreyolo');
  network.emitInference(b, opts);
  if (opts.optimize !== false) {
    foldBatchNorm(b.graph);
    fuseParallelConvs(b.graph);
  }
  return b.graph;
}

export class GraphEngine extends SessionEngine {
  constructor(private readonly network: DetectionNetwork, options: EngineOptions) {
    super(options);
  }

  protected modelFor(dims: number[]): ModelSpec {
    const [batch, , height, width] = dims as [number, number, number, number];
    return {
      key: `${this.precision}|${dims.join('x')}`,
      inputType: 'float32',
      build: async () => serializeModel(await this.convertGraph(buildInferenceGraph(this.network, { batch, height, width }), SESSION_OPSET), { opset: SESSION_OPSET }),
    };
  }

  fork(options: Partial<EngineOptions>): GraphEngine {
    return new GraphEngine(this.network, { ...this.options, ...options });
  }
}

/** Runs an exported `.onnx` file; sessions are keyed by shape only when the file's dims are free. */
export class OnnxFileEngine extends SessionEngine {
  /** The file's fixed batch size, null when its batch axis is free (read on first need). */
  private staticBatch: number | null | undefined;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly inputType: 'float32' | 'float16',
    private readonly dynamic: boolean,
    options: EngineOptions,
  ) {
    super(options);
  }

  protected modelFor(dims: number[]): ModelSpec {
    const converted = this.precision !== 'float32';
    return {
      key: `${this.inputType}|${this.precision}|${this.dynamic ? dims.join('x') : 'static'}`,
      // A quantized file keeps float32 IO: the Casts are inside.
      inputType: converted ? 'float32' : this.inputType,
      build: async () => {
        if (!converted) return this.bytes;
        const opset = summarizeModel(this.bytes).opset || SESSION_OPSET;
        return serializeModel(await this.convertGraph(deserializeModel(this.bytes), opset), { opset });
      },
    };
  }

  override acceptsBatch(batch: number): boolean {
    if (this.staticBatch === undefined) {
      const b = summarizeModel(this.bytes).inputs[0]?.shape[0];
      this.staticBatch = typeof b === 'number' ? b : null;
    }
    return this.staticBatch === null || this.staticBatch === batch;
  }

  fork(options: Partial<EngineOptions>): OnnxFileEngine {
    return new OnnxFileEngine(this.bytes, this.inputType, this.dynamic, { ...this.options, ...options });
  }
}
