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
 *
 * What inference gives depends only on the probe model's bytes and ORT's version, so it is kept on
 * disk (`shape-probe/` under the cache root, util/disk-cache.ts) under their hash: opening the probe
 * session is most of building a train graph (yolo9t at b2/96: 1.3 s of 2.1 s), and every training
 * run, trial and auto-batch probe builds one.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { cacheRoot, cachesEnabled, evictOldest, touchEntry, writeEntry } from '../../util/disk-cache.ts';
import { limit } from '../../util/limits.ts';
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

const ENTRY_SUFFIX = '.shapes.json';

export function shapeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheRoot(env), 'shape-probe');
}

/** A cached inference for exactly `values`, or null (absent, unreadable, or not about these values). */
function readCachedInference(path: string, values: readonly string[]): Map<string, Inferred> | null {
  let rows: unknown;
  try {
    rows = (JSON.parse(readFileSync(path, 'utf8')) as { values?: unknown }).values;
  } catch {
    return null;
  }
  if (!Array.isArray(rows) || rows.length !== values.length) return null;
  const inferred = new Map<string, Inferred>();
  for (const row of rows as unknown[]) {
    if (!Array.isArray(row) || typeof row[0] !== 'string' || typeof row[1] !== 'string') return null;
    const dims = row[2] === null ? null : Array.isArray(row[2]) && row[2].every((d) => Number.isInteger(d) && d >= 0) ? row[2] as number[] : undefined;
    if (dims === undefined) return null;
    inferred.set(row[0], { dtype: row[1] as DType, dims });
  }
  return values.every((v) => inferred.has(v)) ? inferred : null;
}

/** ORT's inferred type and shape of each of `values`, from a session that is created, not run (or the cache). */
async function inferValues(graph: Graph, values: string[], opset: number): Promise<Map<string, Inferred>> {
  const model = serializeModel(graph, { opset, untypedOutputs: values });
  const dir = shapeCacheDir();
  const name = `${createHash('sha256').update(ort.env.versions.node ?? ort.env.versions.common ?? '').update('\0').update(model).digest('hex').slice(0, 32)}${ENTRY_SUFFIX}`;
  if (cachesEnabled()) {
    const cached = readCachedInference(join(dir, name), values);
    if (cached) {
      touchEntry(join(dir, name));
      return cached;
    }
  }
  const session = await ort.InferenceSession.create(model, SESSION_OPTIONS);
  const inferred = new Map<string, Inferred>();
  try {
    for (const m of session.outputMetadata) {
      if (!m.isTensor) continue;
      const fixed = m.shape.every((d): d is number => typeof d === 'number' && d >= 0);
      inferred.set(m.name, { dtype: m.type as DType, dims: fixed ? [...m.shape] as number[] : null });
    }
  } finally {
    await session.release();
  }
  // Only a complete answer is kept (probeShapes refuses an incomplete one).
  if (cachesEnabled() && values.every((v) => inferred.has(v))) {
    const rows = values.map((v) => [v, inferred.get(v)!.dtype, inferred.get(v)!.dims]);
    if (writeEntry(join(dir, name), JSON.stringify({ values: rows }))) evictOldest(dir, limit('shapeCacheBytes'), name, [ENTRY_SUFFIX]);
  }
  return inferred;
}

let measureRuns = 0;

/**
 * How many probes in this process needed a run (values whose dims ORT's inference left open). A
 * run costs a whole forward and its session (RF-DETR's train graph: ~2 s of a 2.2 s build), so the
 * trainable families' graphs keep every dim inferable; a test holds them to it.
 */
export function shapeProbeRuns(): number {
  return measureRuns;
}

/** Runs `graph` once with each of `values`' Shape as the only outputs; returns their dims. */
async function measureDims(graph: Graph, values: string[], feeds: Record<string, HostTensor>, opset: number): Promise<Map<string, number[]>> {
  measureRuns++;
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
