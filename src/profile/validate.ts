/**
 * The profile.json schema, checked where profiles are read (a hand-edited or foreign file) and
 * where they are written (so nothing unreadable is ever written). A failure names the field and
 * what it should be: `field 'kernels[3].pct_of_gpu' must be a number, got "fast"`.
 *
 * NaN and Infinity are not valid in a profile: JSON has no such values (Python's json module
 * writes them, JSON.parse refuses them), so the writer refuses them too (pyJson) and every number
 * here must be finite, and within +/-1e15 (a figure no measurement reaches; a larger one is a
 * corrupt file, not a profile to print with 300 digits).
 */
import type { ProfileAnalysis } from './schema.ts';

export class ProfileSchemaError extends Error {}

/** The largest magnitude a profile or trace number may have (µs: 31 years; ms: 31,000 years). */
export const LIMIT = 1e15;

type Check = (v: unknown, path: string) => void;

const show = (v: unknown): string => {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  if (Array.isArray(v)) return 'an array';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  return String(v);
};

const fail = (path: string, what: string, v: unknown): never => {
  throw new ProfileSchemaError(`field '${path}' must be ${what}, got ${show(v)}`);
};

const num: Check = (v, p) => {
  if (typeof v !== 'number' || !Number.isFinite(v) || Math.abs(v) > LIMIT) fail(p, 'a finite number', v);
};
const count: Check = (v, p) => {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(p, 'a whole number >= 0', v);
};
const str: Check = (v, p) => {
  if (typeof v !== 'string') fail(p, 'a string', v);
};
const bool: Check = (v, p) => {
  if (typeof v !== 'boolean') fail(p, 'true or false', v);
};
const nullable = (c: Check): Check => (v, p) => {
  if (v !== null) c(v, p);
};
const obj: Check = (v, p) => {
  if (!v || typeof v !== 'object' || Array.isArray(v)) fail(p, 'an object', v);
};
const list = (item: Check): Check => (v, p) => {
  if (!Array.isArray(v)) fail(p, 'a list', v);
  (v as unknown[]).forEach((x, i) => item(x, `${p}[${i}]`));
};
const record = (item: Check): Check => (v, p) => {
  obj(v, p);
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) item(x, `${p}.${k}`);
};
const shape = (fields: Record<string, Check>, optional: Record<string, Check> = {}): Check => (v, p) => {
  obj(v, p);
  const o = v as Record<string, unknown>;
  const at = (k: string): string => (p ? `${p}.${k}` : k);
  for (const [k, c] of Object.entries(fields)) {
    if (!(k in o)) throw new ProfileSchemaError(`field '${at(k)}' is missing`);
    c(o[k], at(k));
  }
  for (const [k, c] of Object.entries(optional)) if (k in o && o[k] !== undefined) c(o[k], at(k));
};
const scalar: Check = (v, p) => {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return;
  num(v, p);
};

const kernelRow = shape({ kernel: str, raw_name: str, category: str, tensorcore: bool, ms_per_step: num, pct_of_gpu: num, count_per_step: count });
const opRow = shape({ op: str, ms_per_step: num, pct_of_cpu_ops: num, count_per_step: count });

const PROFILE = shape({
  schema: str, trace: nullable(str), model: nullable(str), config: obj, bound: str, bound_why: str,
  step_ms: num, img_per_s: nullable(num), dataload_ms: nullable(num), dataload_frac: nullable(num),
  gpu_util: num, gpu_util_raw: num, memory_pressure: bool, cuda_mallocs_per_step: count, host_overhead_ms_per_step: num,
  launches_per_step: count, gpu_busy_ms_per_step: num, mean_kernel_us: num, kernels_per_step: count, unique_kernels: count,
  memcpy_ms_per_step: num, tensorcore_pct: num, peak_vram_mb: nullable(num),
  window: shape({ wall_ms: num, real_steps: count }),
  metrics: record(scalar),
  categories: list(shape({ name: str, pct: num, ms_per_step: num })),
  phases: list(shape({ phase: str, gpu_ms_per_step: num, wall_ms_per_step: nullable(num), kernels_per_step: count, ops_per_step: count }, { unique_kernels: count })),
  phases_gpu: list(shape({ phase: str, gpu_ms_per_step: num })),
  kernels_by_phase: record(list(kernelRow)),
  ops_by_phase: record(list(opRow)),
  top_kernels: list(kernelRow),
  kernels: list(kernelRow),
  ops: list(opRow),
}, {
  mode: str, peak_rss_mb: nullable(num), notes: list(str),
  latency: shape({ p50_ms: nullable(num), p90_ms: nullable(num), p99_ms: nullable(num), mean_ms: num, n: count }, { min_ms: nullable(num), max_ms: nullable(num) }),
  stages_ms: shape({ preprocess: num, forward: num, postprocess: num }),
  trace_window: obj, aggregation: obj,
  img_per_s_std: nullable(num), img_per_s_n: count, img_per_s_trials: list(num),
});

/** Checks `data` against the profile.json schema; returns it typed, or throws naming the field. */
export function validateProfile(data: unknown): ProfileAnalysis {
  PROFILE(data, '');
  return data as ProfileAnalysis;
}
