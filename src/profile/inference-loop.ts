/**
 * Profiling the inference path: warmup, then timed `predict` calls exactly as a user makes them
 * (decode, letterbox, forward in the session worker, NMS, Results), each a step. Latency is the wall
 * time of a call; the stage split is the per-image `Results.speed`. With a trace, a few further
 * steps run on a session with ORT's profiler on (its per-node cost would distort the timed numbers)
 * and the host spans mark their phases; without one, the stage times alone give the verdict.
 * Platform-free: the platform (inference.ts in Node, browser/profile.ts in a page) gives the trace
 * recorder, the memory reading and what happens to the finished profile.
 */
import type { PredictOptions } from '../predict/options.ts';
import type { Results } from '../predict/results.ts';
import type { Device } from '../runtime/device.ts';
import type { SessionEngine } from '../runtime/engine.ts';
import { inferenceMetrics } from './analyze.ts';
import { pyRound } from './pyfmt.ts';
import { SCHEMA, type Latency, type ProfileAnalysis, type ProfileSummary, type Stages } from './schema.ts';
import { mean, percentile } from './stats.ts';
import { inferenceVerdict } from './verdict.ts';
import type { VerdictOf } from './conclude.ts';

/**
 * What the inference profile drives (the `LibreYOLOModel` facade is one): predict calls on sources
 * (`S`: paths in Node, image sources in a page), and the engine whose sessions it traces.
 */
export interface InferenceTarget<S = string> {
  readonly engine: SessionEngine;
  readonly device: Device;
  predict(source: S[], options: PredictOptions): Promise<Results[]>;
  predict(source: S, options: PredictOptions): Promise<Results | Results[]>;
}

/** A trace recorded over the engine's sessions while steps run (the Node recorder, or the browser's). */
export interface InferenceTrace {
  beginMeasurement(): void;
  step<T>(index: number, fn: () => Promise<T>): Promise<T>;
  /** Turns profiling off and drops what is left; safe to repeat. */
  abort(): Promise<void>;
  /** Known once the profile is finalized: whether ORT reported device kernel events (not only node times). */
  readonly sawDeviceKernels: boolean;
}

/** What a platform gives the profile loop. */
export interface ProfilePlatform<T extends InferenceTrace> {
  /** Turns ORT profiling on for the engines' sessions (recreated, profiled, on their next run). */
  startTrace(engines: readonly SessionEngine[]): Promise<T>;
  /** The process's resident set in bytes now, or null where the platform cannot say (a page). */
  rssBytes(): number | null;
  /** The profile from the trace (or from `fallback` without one), concluded with `verdict`, and saved where `saveDir` says. */
  finalize(o: { trace: T | null; saveDir: string | null; summary: ProfileSummary; fallback: (summary: ProfileSummary) => ProfileAnalysis; verdict: VerdictOf }): Promise<ProfileAnalysis>;
}

export interface InferenceProfileOptions {
  warmup: number;
  runs: number;
  /** Images per predict call. */
  batch: number;
  imgsz: number | [number, number];
  conf: number;
  iou: number;
  maxDet: number;
  /** Record an ORT + host trace (kernels, ops, phases). */
  trace: boolean;
  /** Where profile.json and friends go; null keeps the result in memory. */
  saveDir: string | null;
  /** Whether the forward runs in half precision (recorded in `config`). */
  half?: boolean;
  /** Half dtype when `half` (recorded in `config`). */
  ampDtype?: 'float16' | 'bfloat16';
  /** Goes into `config` (the CLI passes `{model: weights}`). */
  meta?: Record<string, unknown>;
  /** Said in the profile (e.g. that --half ran fp32). */
  notes?: string[];
}

async function predictOnce<S>(model: InferenceTarget<S>, images: S[], o: InferenceProfileOptions): Promise<Results[]> {
  const opts = { conf: o.conf, iou: o.iou, max_det: o.maxDet, imgsz: o.imgsz, batch: o.batch };
  if (images.length > 1) return model.predict(images, opts);
  const out = await model.predict(images[0]!, opts);
  return Array.isArray(out) ? out : [out];
}

function latencyOf(xs: number[], stepFallback: number): Latency {
  const meanMs = xs.length ? pyRound(mean(xs), 3) : pyRound(stepFallback, 3);
  return {
    p50_ms: percentile(xs, 50), p90_ms: percentile(xs, 90), p99_ms: percentile(xs, 99), mean_ms: meanMs,
    min_ms: xs.length ? pyRound(xs.reduce((a, b) => Math.min(a, b)), 3) : null, max_ms: xs.length ? pyRound(xs.reduce((a, b) => Math.max(a, b)), 3) : null, n: xs.length,
  };
}

/** The profile of an untraced run: timing and the stage split, no kernel detail. */
export function untracedProfile(summary: ProfileSummary): ProfileAnalysis {
  const meta = summary.meta ?? {};
  const stages = summary.stages_ms!;
  const latency = summary.latency!;
  const a: ProfileAnalysis = {
    schema: SCHEMA, mode: 'inference', trace: null, model: (meta.model as string | undefined) ?? null, config: meta,
    bound: summary.bound ?? '', bound_why: summary.bound_why ?? '', step_ms: latency.mean_ms, img_per_s: summary.real?.img_per_s ?? null,
    dataload_ms: 0.0, dataload_frac: 0.0, gpu_util: 0.0, gpu_util_raw: 0.0, memory_pressure: false, cuda_mallocs_per_step: 0,
    host_overhead_ms_per_step: 0.0, launches_per_step: 0, gpu_busy_ms_per_step: 0.0, mean_kernel_us: 0.0, kernels_per_step: 0,
    unique_kernels: 0, memcpy_ms_per_step: 0.0, tensorcore_pct: 0.0, peak_vram_mb: summary.analysis?.peak_vram_mb ?? null,
    peak_rss_mb: summary.peak_rss_mb ?? null, window: { wall_ms: 0.0, real_steps: latency.n }, latency, stages_ms: stages, metrics: {},
    categories: [],
    phases: (['preprocess', 'forward', 'postprocess'] as const).map((p) => ({
      phase: p, gpu_ms_per_step: 0.0, wall_ms_per_step: stages[p], kernels_per_step: 0, ops_per_step: 0, unique_kernels: 0,
    })),
    phases_gpu: [], kernels_by_phase: {}, ops_by_phase: {}, top_kernels: [], kernels: [], ops: [],
    notes: [...(summary.notes ?? []), 'no trace (--no-trace): kernel, utilisation, host-overhead and device-memory fields are empty or 0'],
  };
  a.metrics = {
    img_per_s: a.img_per_s, step_ms: a.step_ms, gpu_util: a.gpu_util, gpu_busy_ms: a.gpu_busy_ms_per_step, mean_kernel_us: a.mean_kernel_us,
    kernels_per_step: a.kernels_per_step, unique_kernels: a.unique_kernels, memcpy_ms: a.memcpy_ms_per_step, tensorcore_pct: a.tensorcore_pct,
    peak_vram_mb: a.peak_vram_mb, peak_rss_mb: a.peak_rss_mb ?? null, host_overhead_ms: a.host_overhead_ms_per_step,
    launches_per_step: a.launches_per_step, cuda_mallocs_per_step: a.cuda_mallocs_per_step, memory_pressure: a.memory_pressure,
    ...inferenceMetrics(a),
    preprocess_wall_ms: stages.preprocess, forward_wall_ms: stages.forward, postprocess_wall_ms: stages.postprocess,
  };
  return a;
}

/** Steps traced after the timed runs: enough for the analysis window (markers 2..7 and an end). */
export const TRACE_STEPS = 10;

interface Samples {
  latency: number[];
  preprocess: number[];
  forward: number[];
  postprocess: number[];
  /** Bytes; null where the platform cannot say. */
  peakRss: number | null;
}

/** Runs `count` predict calls starting at call number `from` (images cycle through the source). */
async function runSteps<S>(
  platform: ProfilePlatform<InferenceTrace>, model: InferenceTarget<S>, images: readonly S[], o: InferenceProfileOptions, from: number, count: number,
  wrap: (index: number, fn: () => Promise<Results[]>) => Promise<Results[]> = (_, fn) => fn(),
): Promise<Samples> {
  const s: Samples = { latency: [], preprocess: [], forward: [], postprocess: [], peakRss: null };
  for (let k = 0; k < count; k++) {
    const i = from + k;
    const batch = Array.from({ length: o.batch }, (_, j) => images[(i * o.batch + j) % images.length]!);
    const t0 = performance.now();
    const results = await wrap(k, () => predictOnce(model, batch, o));
    s.latency.push(performance.now() - t0);
    const rss = platform.rssBytes();
    if (rss !== null) s.peakRss = Math.max(s.peakRss ?? 0, rss);
    s.preprocess.push(results.reduce((a, r) => a + r.speed.preprocess, 0));
    s.forward.push(results.reduce((a, r) => a + r.speed.inference, 0));
    s.postprocess.push(results.reduce((a, r) => a + r.speed.postprocess, 0));
  }
  return s;
}

/**
 * Traces TRACE_STEPS more calls on a profiled session (created by one untraced call first); the
 * recorder is returned unfinished, for finish(path) to write the trace.
 */
async function traceWindow<S, T extends InferenceTrace>(
  platform: ProfilePlatform<T>, model: InferenceTarget<S>, images: readonly S[], o: InferenceProfileOptions, from: number, steps: number,
): Promise<T> {
  const recorder = await platform.startTrace([model.engine]);
  try {
    await runSteps(platform, model, images, o, from, 1);
    recorder.beginMeasurement();
    await runSteps(platform, model, images, o, from + 1, steps, (k, fn) => recorder.step(k, fn));
    return recorder;
  } catch (err) {
    await recorder.abort();
    throw err;
  }
}

/** The profile of `model` on `images` (cycled through), on the platform that records and saves it. */
export async function runInferenceProfile<S, T extends InferenceTrace>(
  platform: ProfilePlatform<T>, model: InferenceTarget<S>, images: readonly S[], opts: InferenceProfileOptions,
): Promise<ProfileAnalysis> {
  if (!images.length) throw new Error('no images to profile');
  const o = { ...opts, warmup: Math.max(0, opts.warmup), runs: Math.max(2, opts.runs), batch: Math.max(1, opts.batch) };
  await runSteps(platform, model, images, o, 0, o.warmup);
  const timed = await runSteps(platform, model, images, o, o.warmup, o.runs);
  const stages: Stages = {
    preprocess: pyRound(mean(timed.preprocess), 3), forward: pyRound(mean(timed.forward), 3), postprocess: pyRound(mean(timed.postprocess), 3),
  };
  const traceSteps = Math.min(o.runs, TRACE_STEPS);
  const trace = o.trace ? await traceWindow(platform, model, images, o, o.warmup + o.runs, traceSteps) : null;

  const latency = latencyOf(timed.latency, stages.preprocess + stages.forward + stages.postprocess);
  const imgPerS = latency.mean_ms > 0 ? pyRound(o.batch / (latency.mean_ms / 1000), 2) : 0.0;
  const device = model.device;
  const summary: ProfileSummary = {
    meta: {
      ...o.meta, batch: o.batch, imgsz: o.imgsz, half: o.half ?? false, amp_dtype: o.ampDtype ?? 'float16',
      device: device.id, conf: o.conf, iou: o.iou, max_det: o.maxDet, mode: 'inference',
    },
    real: { step_ms: latency.mean_ms, img_per_s: imgPerS, dataload_ms: 0.0, dataload_frac: 0.0 },
    // Phase walls: the timed stages, or (traced) the trace's own phase spans, which match its kernels.
    ...(trace ? {} : { composition_ms: { ...stages } }),
    latency,
    latency_samples_ms: timed.latency.map((x) => pyRound(x, 3)),
    stages_ms: stages,
    bound: null,
    bound_why: '',
    peak_rss_mb: timed.peakRss === null ? null : pyRound(timed.peakRss / 1e6, 1),
    ...(trace ? { trace_window: { separate: true as const, steps: traceSteps } } : {}),
    ...(o.notes?.length ? { notes: o.notes } : {}),
  };
  try {
    return await platform.finalize({
      trace, saveDir: o.saveDir, summary, fallback: untracedProfile,
      verdict: (a) => inferenceVerdict({ pre: stages.preprocess, fwd: stages.forward, post: stages.postprocess }, {
        cpu: device.kind === 'cpu',
        // Device busy time is known on CPU from ORT's node events, elsewhere only from device kernel events.
        util: trace && (device.kind === 'cpu' || trace.sawDeviceKernels) ? a.gpu_util : null,
        // Compared with the forward time of the same (analysed, traced) steps.
        busy: device.kind === 'cpu' && a.kernels_per_step > 0 && a.trace_window?.forward_ms ? { kernelMs: a.gpu_busy_ms_per_step, forwardMs: a.trace_window.forward_ms } : null,
      }),
    });
  } finally {
    await trace?.abort();
  }
}
