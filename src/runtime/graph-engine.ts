/** Engines over the two kinds of model: an IR network (graph built per input shape) and an ONNX file. */
import { deserializeModel, serializeModel, summarizeModel } from '../graph/onnx.ts';
import type { DetectionNetwork } from '../models/registry.ts';
import { buildInferenceGraph, SESSION_OPSET } from './inference-graph.ts';
import type { HostTensor } from '../graph/tensor.ts';
export { buildExportGraph, buildInferenceGraph } from './inference-graph.ts';
import { SessionEngine, type EngineOptions, type ForwardResult, type ModelSpec } from './engine.ts';

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
    /** Converts the file's output to the predict layout (a family whose export layout differs). */
    private readonly adaptOutput?: (output: HostTensor, context: { extra: Record<string, HostTensor>; inputDims: readonly number[] }) => HostTensor,
  ) {
    super(options);
  }

  /** The file's own output, before any layout conversion. */
  forwardRaw(images: HostTensor, options: { transfer?: boolean } = {}): Promise<ForwardResult> {
    return super.forward(images, options);
  }

  override async forward(images: HostTensor, options: { transfer?: boolean } = {}): Promise<ForwardResult> {
    const r = await super.forward(images, options);
    return this.adaptOutput ? { ...r, output: this.adaptOutput(r.output, { extra: r.extra, inputDims: images.dims }) } : r;
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
    return new OnnxFileEngine(this.bytes, this.inputType, this.dynamic, { ...this.options, ...options }, this.adaptOutput);
  }
}
