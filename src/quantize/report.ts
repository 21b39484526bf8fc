/**
 * What a model really computes in: one forward on a profiled copy of its engine, read back from ONNX
 * Runtime's own profile. Each kernel execution is attributed to a part of the network by its node
 * name (`/backbone/...`, `/neck/...`, `/head/...`, `/head/decode/...`) and to the element type it
 * consumed, so kernels the runtime ran in float32 (after inserting its own casts, or because a half
 * kernel does not exist on the device) show up as such.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PrecisionSummary } from '../graph/passes/precision.ts';
import type { SessionEngine } from '../runtime/engine.ts';

export interface PartPrecision {
  part: string;
  kernels: number;
  /** Kernel executions by the element type they computed in. */
  by_dtype: Record<string, number>;
  /** The same, per op type. */
  ops: Record<string, Record<string, number>>;
}

export interface PrecisionReport {
  /** The model's nominal precision (what its weights were converted to). */
  precision: 'fp32' | 'fp16' | 'bf16';
  device: string;
  providers: string[];
  io: { input: string; output: string };
  parts: PartPrecision[];
  /** Ops this package kept in float32 because the device has no half kernel for them. */
  kept_float32_ops: Record<string, number>;
  /** Casts the runtime itself inserted (its float16 fallback for ops without half kernels). */
  runtime_inserted_casts: number;
  /** One line per part, e.g. `backbone: float32 370 kernels (Conv float32 ...)`. */
  summary: string[];
}

interface NodeEvent {
  cat?: string;
  name?: string;
  args?: { op_name?: string; provider?: string; input_type_shape?: Array<Record<string, unknown>> };
}

const TYPE_NAMES: Record<string, string> = { float: 'float32', float16: 'float16', MLFloat16: 'float16', bfloat16: 'bfloat16', BFloat16: 'bfloat16', double: 'float64' };

/** The floating type a kernel consumed (its first floating input), or 'other' for integer-only kernels. */
function computeType(e: NodeEvent): string {
  for (const t of e.args?.input_type_shape ?? []) {
    const name = TYPE_NAMES[Object.keys(t)[0] ?? ''];
    if (name) return name;
  }
  return 'other';
}

/**
 * `/backbone/conv0/...` -> backbone; `/head/decode/...` -> decode. ORT keeps the original path inside
 * the names of nodes it rewrites (`InsertedPrecisionFreeCast_/backbone/...`); nodes it creates from
 * nothing (NCHWc `ReorderInput`/`ReorderOutput`) count as `runtime`.
 */
function partOf(nodeName: string): string {
  const m = /\/([^/]+)(?:\/([^/]+))?/.exec(nodeName);
  if (!m) return 'runtime';
  if (m[1] === 'head' && m[2] === 'decode') return 'decode';
  if (m[1] === 'precision') return 'precision casts';
  return m[1]!;
}

export function summarizeProfile(events: NodeEvent[]): { parts: PartPrecision[]; providers: string[]; runtimeCasts: number } {
  const parts = new Map<string, PartPrecision>();
  const providers = new Set<string>();
  let runtimeCasts = 0;
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name?.endsWith('_kernel_time')) continue;
    const node = e.name.slice(0, -'_kernel_time'.length);
    const op = e.args?.op_name ?? '?';
    if (e.args?.provider) providers.add(e.args.provider);
    if (op === 'Cast' && /^InsertedPrecisionFreeCast/.test(node)) runtimeCasts++;
    const part = partOf(node);
    const dtype = computeType(e);
    const p = parts.get(part) ?? { part, kernels: 0, by_dtype: {}, ops: {} };
    p.kernels++;
    p.by_dtype[dtype] = (p.by_dtype[dtype] ?? 0) + 1;
    const byOp = p.ops[op] ??= {};
    byOp[dtype] = (byOp[dtype] ?? 0) + 1;
    parts.set(part, p);
  }
  const order = ['backbone', 'neck', 'head', 'decode', 'precision casts', 'runtime'];
  const rank = (p: string): number => (order.includes(p) ? order.indexOf(p) : order.length - 1);
  return { parts: [...parts.values()].sort((a, b) => rank(a.part) - rank(b.part)), providers: [...providers], runtimeCasts };
}

function describe(p: PartPrecision): string {
  const types = Object.entries(p.by_dtype).sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t} ${n}`).join(', ');
  const heavy = ['Conv', 'MatMul', 'Gemm'].filter((op) => p.ops[op]).map((op) => `${op}: ${Object.entries(p.ops[op]!).map(([t, n]) => `${t} ${n}`).join(', ')}`);
  return `${p.part}: ${p.kernels} kernels (${types})${heavy.length ? `; ${heavy.join('; ')}` : ''}`;
}

/** Runs one forward of `imgsz` on a profiled fork of `engine` and reports the precision of each part. */
export async function precisionReport(engine: SessionEngine, imgsz: [number, number], precision: PrecisionReport['precision'], io: PrecisionReport['io']): Promise<PrecisionReport> {
  const dir = await mkdtemp(join(tmpdir(), 'libreyolo-precision-'));
  const fork = engine.fork({ profileFilePrefix: join(dir, 'precision') });
  let pass: PrecisionSummary | null;
  let events: NodeEvent[];
  try {
    await fork.forward({ dtype: 'float32', dims: [1, 3, imgsz[0], imgsz[1]], data: new Float32Array(3 * imgsz[0] * imgsz[1]).fill(0.5) });
    await fork.endProfiling();
    pass = fork.lastPrecision;
    const file = (await readdir(dir)).find((f) => f.endsWith('.json'));
    events = file ? JSON.parse(await readFile(join(dir, file), 'utf8')) as NodeEvent[] : [];
  } finally {
    await fork.close();
    await rm(dir, { recursive: true, force: true });
  }
  const { parts, providers, runtimeCasts } = summarizeProfile(events);
  return {
    precision, device: engine.device.id, providers, io, parts,
    kept_float32_ops: pass?.keptFloat ?? {},
    runtime_inserted_casts: runtimeCasts,
    summary: parts.map(describe),
  };
}
