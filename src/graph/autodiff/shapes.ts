/**
 * Static shapes of every value in a graph, obtained from ONNX Runtime itself. The gradient rules
 * need shapes (to undo broadcasting, split concatenations, size transposed convolutions), and ORT
 * is the authority on what shapes its ops produce.
 *
 * First ORT's own type and shape inference: a session (optimisations off, so every value exists)
 * with every value as an untyped output is created, never run, and its output metadata names each
 * value's element type and, when inference can tell, its dims. That covers every value of the
 * models here (yolo9c's training forward: 6,690 of 6,690, all equal to what a run gives), so the
 * probe holds no activations at all.
 *
 * Values whose dims inference leaves open (data-dependent shapes) are measured by one run with
 * their `Shape` as the only outputs. ORT schedules a side branch such as that Shape after the main
 * chain its input feeds, so each value measured this way stays alive to the end of the run: a cost
 * paid only for those values. Fetching every value itself (as this did before) kept all
 * activations at once and copied them to JS: 1.2 GB for yolo9c at batch 1, 320, about 10 GB at
 * batch 2, 640, before the first training step.
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

const SESSION_OPTIONS: ort.InferenceSession.SessionOptions = { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 };

interface Inferred {
  dtype: DType;
  /** Null when inference left a dim symbolic or unknown. */
  dims: number[] | null;
}

/** ORT's inferred type and shape of each of `values`, from a session that is created, not run. */
async function inferValues(graph: Graph, values: string[], opset: number): Promise<Map<string, Inferred>> {
  const session = await ort.InferenceSession.create(serializeModel(graph, { opset, untypedOutputs: values }), SESSION_OPTIONS);
  try {
    const inferred = new Map<string, Inferred>();
    for (const m of session.outputMetadata) {
      if (!m.isTensor) continue;
      const fixed = m.shape.every((d): d is number => typeof d === 'number' && d >= 0);
      inferred.set(m.name, { dtype: m.type as DType, dims: fixed ? [...m.shape] as number[] : null });
    }
    return inferred;
  } finally {
    await session.release();
  }
}

/** Runs `graph` once with each of `values`' Shape as the only outputs; returns their dims. */
async function measureDims(graph: Graph, values: string[], feeds: Record<string, HostTensor>, opset: number): Promise<Map<string, number[]>> {
  const probe = graph.clone();
  probe.outputs = [];
  const outputs = new Map(values.map((v) => [v, `${v}/__shape_probe`]));
  for (const [v, out] of outputs) probe.nodes.push({ op: 'Shape', name: `${out}/Shape`, inputs: [v], outputs: [out], attrs: {} });
  const session = await ort.InferenceSession.create(serializeModel(probe, { opset, untypedOutputs: [...outputs.values()] }), SESSION_OPTIONS);
  try {
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const v of graph.inputs) ortFeeds[v.name] = toOrt(feeds[v.name]!);
    const out = await session.run(ortFeeds);
    return new Map([...outputs].map(([v, name]) => [v, Array.from(out[name]!.data as BigInt64Array, Number)]));
  } finally {
    await session.release();
  }
}

export async function probeShapes(graph: Graph, feeds: Record<string, HostTensor>, opset = 17): Promise<ShapeMap> {
  const shapes: ShapeMap = new Map();
  for (const [name, t] of graph.initializers) shapes.set(name, { dims: t.dims, dtype: t.dtype });
  for (const v of graph.inputs) shapes.set(v.name, { dims: feeds[v.name]?.dims ?? v.shape.map(Number), dtype: v.dtype });
  const known = new Set([...graph.inputs.map((i) => i.name), ...graph.initializers.keys()]);
  const values = [...new Set(graph.nodes.flatMap((n) => n.outputs))].filter((v) => v && !known.has(v));
  const inferred = await inferValues(graph, values, opset);
  const open = values.filter((v) => !inferred.get(v)?.dims);
  const measured = open.length ? await measureDims(graph, open, feeds, opset) : new Map<string, number[]>();
  for (const v of values) {
    const meta = inferred.get(v);
    if (!meta) throw new Error(`shape probe: ORT inferred no tensor type for ${v}`);
    shapes.set(v, { dims: meta.dims ?? measured.get(v)!, dtype: meta.dtype });
  }
  return shapes;
}
