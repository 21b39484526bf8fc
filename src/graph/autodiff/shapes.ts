/**
 * Static shapes of every value in a graph, obtained by asking ONNX Runtime itself: the graph runs
 * once (optimisations off, so every value exists) with all values as extra outputs. The gradient
 * rules need shapes (to undo broadcasting, split concatenations, size transposed convolutions), and
 * ORT is the authority on what shapes its ops produce.
 */
import * as ort from 'onnxruntime-node';
import type { Graph } from '../ir.ts';
import { serializeModel } from '../onnx.ts';
import type { DType, HostTensor } from '../tensor.ts';

export interface ValueMeta {
  dims: number[];
  dtype: DType;
}

export type ShapeMap = Map<string, ValueMeta>;

function toOrt(t: HostTensor): ort.Tensor {
  return new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
}

export async function probeShapes(graph: Graph, feeds: Record<string, HostTensor>, opset = 17): Promise<ShapeMap> {
  const shapes: ShapeMap = new Map();
  for (const [name, t] of graph.initializers) shapes.set(name, { dims: t.dims, dtype: t.dtype });
  for (const v of graph.inputs) shapes.set(v.name, { dims: feeds[v.name]?.dims ?? v.shape.map(Number), dtype: v.dtype });
  const declared = new Set([...graph.outputs.map((o) => o.name), ...graph.inputs.map((i) => i.name), ...graph.initializers.keys()]);
  const extra = [...new Set(graph.nodes.flatMap((n) => n.outputs))].filter((v) => v && !declared.has(v));
  const session = await ort.InferenceSession.create(serializeModel(graph, { opset, untypedOutputs: extra }), {
    graphOptimizationLevel: 'disabled', intraOpNumThreads: 1,
  });
  try {
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const v of graph.inputs) ortFeeds[v.name] = toOrt(feeds[v.name]!);
    const out = await session.run(ortFeeds);
    for (const [name, t] of Object.entries(out)) shapes.set(name, { dims: [...t.dims], dtype: t.type as DType });
  } finally {
    await session.release();
  }
  return shapes;
}
