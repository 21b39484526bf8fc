/**
 * The shapes of what the profiler writes: `profile.json` (schema `libreyolo.profile.analysis/v1`,
 * the original's field names kept so its users' scripts keep working), `profile_summary.json`, and
 * the Chrome trace events both are derived from.
 */

export const SCHEMA = 'libreyolo.profile.analysis/v1';

/** Phases in display order; a host span whose category is one of these marks that phase. */
export const PHASE_ORDER = ['dataload', 'to_device', 'preprocess', 'forward', 'backward', 'postprocess', 'optimizer'] as const;

export const PROFILE_FILE = 'profile.json';
export const TRACE_FILE = 'profile_trace.json';
export const SUMMARY_FILE = 'profile_summary.json';
export const TIMELINE_FILE = 'timeline.html';

export const STEP_MARKER = 'ProfilerStep';
export const PHASE_PREFIX = 'step/';

/** One Chrome trace event (torch.profiler, ONNX Runtime and our merged traces all use this form). */
export interface TraceEvent {
  ph?: string;
  cat?: string;
  name?: string;
  ts?: number;
  dur?: number;
  pid?: number | string;
  tid?: number | string;
  id?: number | string;
  args?: Record<string, unknown>;
}

export interface ChromeTrace {
  traceEvents: TraceEvent[];
  displayTimeUnit?: string;
  [key: string]: unknown;
}

export interface KernelRow {
  kernel: string;
  raw_name: string;
  category: string;
  tensorcore: boolean;
  ms_per_step: number;
  pct_of_gpu: number;
  count_per_step: number;
}

export interface OpRow {
  op: string;
  ms_per_step: number;
  pct_of_cpu_ops: number;
  count_per_step: number;
}

export interface CategoryRow {
  name: string;
  pct: number;
  ms_per_step: number;
}

export interface PhaseRow {
  phase: string;
  gpu_ms_per_step: number;
  wall_ms_per_step: number | null;
  kernels_per_step: number;
  ops_per_step: number;
  unique_kernels: number;
}

export interface Latency {
  p50_ms: number | null;
  p90_ms: number | null;
  p99_ms: number | null;
  mean_ms: number;
  min_ms: number | null;
  max_ms: number | null;
  n: number;
}

export interface Stages {
  preprocess: number;
  forward: number;
  postprocess: number;
}

export type Metrics = Record<string, number | string | boolean | null>;

/** `profile.json`. Optional fields appear only on some profiles (inference, repeat aggregates). */
export interface ProfileAnalysis {
  schema: string;
  mode?: string;
  trace: string | null;
  model: string | null;
  config: Record<string, unknown>;
  bound: string;
  bound_why: string;
  step_ms: number;
  img_per_s: number | null;
  dataload_ms: number | null;
  dataload_frac: number | null;
  gpu_util: number;
  gpu_util_raw: number;
  memory_pressure: boolean;
  cuda_mallocs_per_step: number;
  host_overhead_ms_per_step: number;
  launches_per_step: number;
  gpu_busy_ms_per_step: number;
  mean_kernel_us: number;
  kernels_per_step: number;
  unique_kernels: number;
  memcpy_ms_per_step: number;
  tensorcore_pct: number;
  peak_vram_mb: number | null;
  /** Ours: peak resident set of the process (MB), from the trace's memory counters. */
  peak_rss_mb?: number | null;
  window: { wall_ms: number; real_steps: number };
  /** Ours: the traced steps when they are separate from the timed ones (see TraceWindow). */
  trace_window?: TraceWindow;
  latency?: Latency;
  stages_ms?: Stages;
  metrics: Metrics;
  categories: CategoryRow[];
  phases: PhaseRow[];
  phases_gpu: Array<{ phase: string; gpu_ms_per_step: number }>;
  kernels_by_phase: Record<string, KernelRow[]>;
  ops_by_phase: Record<string, OpRow[]>;
  top_kernels: KernelRow[];
  kernels: KernelRow[];
  ops: OpRow[];
  /** Ours: what the GPU-named fields mean for this profile's device (e.g. CPU). */
  notes?: string[];
  img_per_s_std?: number;
  img_per_s_n?: number;
  img_per_s_trials?: number[];
  aggregation?: Record<string, unknown>;
}

/**
 * ORT's profiler costs several µs per node, so an inference profile times its steps with the
 * profiler off and records the trace in a separate window of steps afterwards. Device metrics
 * (utilisation, host overhead) then come from that window's own step time, and the profiler's cost
 * is reported as the traced steps' forward time against the timed ones'.
 */
export interface TraceWindow {
  separate: true;
  /** Traced steps. */
  steps: number;
  /** The rest is filled in by the analysis, from the analysed traced steps: */
  /** mean step (ms); */
  step_ms?: number;
  /** mean forward-phase wall time (ms), with the profiler on; */
  forward_ms?: number | null;
  /** how much slower that forward was than the timed steps' (%). */
  profiler_overhead_pct?: number | null;
}

/** `profile_summary.json`: what the measuring loop knows that the trace does not. */
export interface ProfileSummary {
  meta?: Record<string, unknown>;
  real?: { step_ms?: number; img_per_s?: number; dataload_ms?: number; dataload_frac?: number; [k: string]: unknown };
  composition_ms?: Record<string, number>;
  latency?: Latency;
  stages_ms?: Stages;
  bound?: string | null;
  bound_why?: string;
  analysis?: { peak_vram_mb?: number | null; [k: string]: unknown };
  /** Ours: peak process RSS (MB) for profiles taken without a trace. */
  peak_rss_mb?: number | null;
  /** Ours: each timed inference call's latency (ms), for timeline.html's histogram. */
  latency_samples_ms?: number[];
  trace_window?: TraceWindow;
  notes?: string[];
  [key: string]: unknown;
}
