/**
 * Finite-difference gradient check through ONNX Runtime: builds `loss = sum(f(inputs) * R)` for a
 * fixed random R, appends the analytic gradient with the autodiff pass, and compares it with central
 * differences of the same ORT forward at sampled coordinates.
 */
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { appendGradients } from '../../src/graph/autodiff/autodiff.ts';
import { probeShapes } from '../../src/graph/autodiff/shapes.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import { lowerComposites } from '../../src/graph/passes/lower-composites.ts';
import type { Graph } from '../../src/graph/ir.ts';
import { seededRandom } from '../../src/models/yolo9/init.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import type { F64 } from '../../src/graph/interpret/array.ts';
import { interpret, toF64 } from '../../src/graph/interpret/interpreter.ts';

export interface GradInput {
  name: string;
  dims: number[];
  /** Values; default uniform in [-1, 1). */
  data?: Float32Array;
  /** Differentiate with respect to it (default true). */
  grad?: boolean;
}

export interface GradCheckResult {
  /** max over sampled coordinates of |analytic - numeric| / max(1, |numeric|) */
  maxRelError: number;
  samples: number;
}

export interface GradGraph {
  graph: Graph;
  feeds: Record<string, HostTensor>;
  /** Inputs differentiated; their gradients are outputs `grad_<name>`. */
  wrt: string[];
}

/** `loss = sum(f(inputs) * R)` for a seeded random R, plus the autodiff gradients, lowered to ONNX ops. */
export async function buildGradGraph(inputs: GradInput[], emit: (b: GraphBuilder, xs: string[]) => string, seed = 1): Promise<GradGraph & { rand: () => number }> {
  const rand = seededRandom(seed);
  const feeds: Record<string, HostTensor> = {};
  const b = new GraphBuilder('gradcheck');
  const names = inputs.map((inp) => {
    const n = inp.dims.reduce((p, q) => p * q, 1);
    feeds[inp.name] = { dtype: 'float32', dims: inp.dims, data: inp.data ?? Float32Array.from({ length: n }, () => rand() * 2 - 1) };
    return b.input(inp.name, 'float32', inp.dims);
  });
  const y = emit(b, names);
  const lowered = (): Graph => {
    const g = b.graph.clone();
    lowerComposites(g);
    return g;
  };
  const probe = await probeShapes(lowered(), feeds);
  const yDims = probe.get(y)!.dims;
  const r = Float32Array.from({ length: yDims.reduce((p, q) => p * q, 1) }, () => rand() * 2 - 1);
  const weighted = b.op('Mul', [y, b.constant('R', { dtype: 'float32', dims: yDims, data: r })]);
  const loss = b.op('ReduceSum', [weighted], { keepdims: { i: 0 } });
  b.output('loss', loss, 'float32', []);
  const wrt = inputs.filter((inp) => inp.grad !== false).map((inp) => inp.name);
  const shapes = await probeShapes(lowered(), feeds);
  const grads = appendGradients(b.graph, { loss: 'loss', wrt, shapes });
  for (const w of wrt) b.output(`grad_${w}`, grads.get(w)!, 'float32', feeds[w]!.dims);
  lowerComposites(b.graph);
  return { graph: b.graph, feeds, wrt, rand };
}

export async function gradCheck(
  inputs: GradInput[],
  emit: (b: GraphBuilder, xs: string[]) => string,
  opts: { seed?: number; eps?: number; samples?: number } = {},
): Promise<GradCheckResult> {
  const eps = opts.eps ?? 1e-2;
  const { graph, feeds, wrt, rand } = await buildGradGraph(inputs, emit, opts.seed ?? 1);
  const session = await ort.InferenceSession.create(serializeModel(graph), { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
  const run = async (f: Record<string, HostTensor>): Promise<ort.InferenceSession.ReturnType> => {
    const o: Record<string, ort.Tensor> = {};
    for (const [k, t] of Object.entries(f)) o[k] = new ort.Tensor('float32', t.data as Float32Array, t.dims);
    return session.run(o);
  };
  const base = await run(feeds);
  let maxRel = 0;
  let samples = 0;
  for (const w of wrt) {
    const analytic = base[`grad_${w}`]!.data as Float32Array;
    const x = feeds[w]!.data as Float32Array;
    const count = Math.min(opts.samples ?? 12, x.length);
    for (let s = 0; s < count; s++) {
      const idx = Math.floor(rand() * x.length);
      const orig = x[idx]!;
      x[idx] = orig + eps;
      const up = (await run(feeds)).loss!.data[0] as number;
      x[idx] = orig - eps;
      const down = (await run(feeds)).loss!.data[0] as number;
      x[idx] = orig;
      const numeric = (up - down) / (2 * eps);
      maxRel = Math.max(maxRel, Math.abs(analytic[idx]! - numeric) / Math.max(1, Math.abs(numeric)));
      samples++;
    }
  }
  await session.release();
  return { maxRelError: maxRel, samples };
}

/**
 * The same check in exact arithmetic: the lowered gradient graph runs on the float64 interpreter,
 * and central differences (default eps 1e-6) of its loss are compared with its analytic gradient.
 * Free of float32 noise, so a tolerance near 1e-7 separates a wrong rule from truncation error.
 */
export async function gradCheck64(
  inputs: GradInput[],
  emit: (b: GraphBuilder, xs: string[]) => string,
  opts: { seed?: number; eps?: number; samples?: number } = {},
): Promise<GradCheckResult> {
  const eps = opts.eps ?? 1e-6;
  const { graph, feeds, wrt, rand } = await buildGradGraph(inputs, emit, opts.seed ?? 1);
  const f64: Record<string, F64> = Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, toF64(t)]));
  const base = interpret(graph, f64);
  let maxRel = 0;
  let samples = 0;
  for (const w of wrt) {
    const analytic = base[`grad_${w}`]!.data;
    const x = f64[w]!.data;
    // Small inputs are checked at every coordinate (a duplicate index touches only a few).
    const every = x.length <= 128 && opts.samples === undefined;
    const count = every ? x.length : Math.min(opts.samples ?? 12, x.length);
    for (let s = 0; s < count; s++) {
      const idx = every ? s : Math.floor(rand() * x.length);
      const orig = x[idx]!;
      x[idx] = orig + eps;
      const up = interpret(graph, f64, ['loss']).loss!.data[0]!;
      x[idx] = orig - eps;
      const down = interpret(graph, f64, ['loss']).loss!.data[0]!;
      x[idx] = orig;
      const numeric = (up - down) / (2 * eps);
      maxRel = Math.max(maxRel, Math.abs(analytic[idx]! - numeric) / Math.max(1, Math.abs(numeric)));
      samples++;
    }
  }
  return { maxRelError: maxRel, samples };
}
