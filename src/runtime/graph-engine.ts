/** Engines over the two kinds of model: an IR network (graph built per input shape) and an ONNX file. */
import { GraphBuilder } from '../graph/builder.ts';
import type { Graph } from '../graph/ir.ts';
import { serializeModel } from '../graph/onnx.ts';
import { foldBatchNorm } from '../graph/passes/fold-batchnorm.ts';
import { fuseParallelConvs } from '../graph/passes/fuse-parallel-convs.ts';
import type { DetectionNetwork } from '../models/registry.ts';
import { SessionEngine, type EngineOptions } from './engine.ts';

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

  protected modelFor(dims: number[]): { key: string; inputType: 'float32'; build: () => Uint8Array } {
    const [batch, , height, width] = dims as [number, number, number, number];
    return {
      key: `float32|${dims.join('x')}`,
      inputType: 'float32',
      build: () => serializeModel(buildInferenceGraph(this.network, { batch, height, width })),
    };
  }
}

/** Runs an exported `.onnx` file; sessions are keyed by shape only when the file's dims are free. */
export class OnnxFileEngine extends SessionEngine {
  constructor(private readonly bytes: Uint8Array, private readonly inputType: 'float32' | 'float16', private readonly dynamic: boolean, options: EngineOptions) {
    super(options);
  }

  protected modelFor(dims: number[]): { key: string; inputType: 'float32' | 'float16'; build: () => Uint8Array } {
    return { key: `${this.inputType}|${this.dynamic ? dims.join('x') : 'static'}`, inputType: this.inputType, build: () => this.bytes };
  }
}
