/**
 * Trace analysis: a Chrome trace (ours, ONNX Runtime's, or torch.profiler's) plus the measuring
 * loop's summary -> a self-contained `profile.json`. The rules are the original's: a window of
 * steady-state steps, kernels attributed to phases by their start time against the host phase spans,
 * per-step averages, and a verdict. What counts as a "kernel" depends on the trace: device kernels
 * when it has them, otherwise ORT node executions (on CPU, the actual compute).
 */
import { friendlyKernel, isTensorCore, kernelCategory } from './classify.ts';
import { pyFixed, pyRound } from './pyfmt.ts';
import {
  PHASE_ORDER, PHASE_PREFIX, SCHEMA, STEP_MARKER,
  type CategoryRow, type KernelRow, type Metrics, type OpRow, type PhaseRow, type ProfileAnalysis, type ProfileSummary, type TraceEvent, type TraceWindow,
} from './schema.ts';
import { pickWindow } from './window.ts';

type Kind = 'kernel' | 'memcpy' | 'malloc' | 'op' | 'phase_gpu' | 'phase_cpu' | null;
type Agg = Map<string, [number, number]>;

const CPU_PROVIDER = 'CPUExecutionProvider';

/** The event list of a trace file's JSON: an array, or an object's `traceEvents` (absent -> empty). */
export function traceEventsOf(data: unknown): TraceEvent[] {
  if (Array.isArray(data)) return data as TraceEvent[];
  if (data && typeof data === 'object') {
    const ev = (data as { traceEvents?: unknown }).traceEvents;
    return Array.isArray(ev) ? (ev as TraceEvent[]) : [];
  }
  throw new Error('a trace must be a JSON object or an array of events');
}

const arg = (e: TraceEvent, key: string): unknown => e.args?.[key];

/** ORT names a kernel by its op type; off the CPU provider the provider is part of the name. */
function ortKey(e: TraceEvent): string {
  const op = arg(e, 'op_name');
  const name = typeof op === 'string' && op ? op : String(e.name ?? '').replace(/_kernel_time$/, '');
  const provider = arg(e, 'provider');
  return typeof provider === 'string' && provider && provider !== CPU_PROVIDER ? `${name} [${provider.replace(/ExecutionProvider$/, '')}]` : name;
}

function kindOf(e: TraceEvent, name: string, deviceKernels: boolean): Kind {
  switch (e.cat) {
    case 'kernel': case 'Kernel': return 'kernel';
    // ORT node executions are the compute unless the build also reports device kernels.
    case 'Node': return deviceKernels ? 'op' : 'kernel';
    case 'gpu_memcpy': case 'gpu_memset': return 'memcpy';
    case 'cuda_runtime': return name.includes('Malloc') || name.includes('Free') ? 'malloc' : null;
    case 'cpu_op': case 'Session': case 'host': return 'op';
    case 'gpu_user_annotation': return name.startsWith(PHASE_PREFIX) ? 'phase_gpu' : null;
    case 'user_annotation': return name.startsWith(PHASE_PREFIX) ? 'phase_cpu' : null;
    default: return null;
  }
}

function add(map: Agg, key: string, us: number): void {
  const v = map.get(key);
  if (v) {
    v[0] += us;
    v[1] += 1;
  } else map.set(key, [us, 1]);
}

const sumUs = (m: Agg | undefined): number => [...(m?.values() ?? [])].reduce((a, [us]) => a + us, 0);

/** Stable sort, largest first (JS sort is stable; never sort().reverse()). */
const byDesc = <T>(rows: T[], key: (r: T) => number): T[] => rows.sort((a, b) => key(b) - key(a));

function notesFor(providers: Set<string>, nodeKernels: boolean): string[] {
  if (!nodeKernels) return [];
  const onCpu = [...providers].every((p) => p === CPU_PROVIDER);
  if (onCpu) {
    return [
      'cpu: a kernel is one ONNX Runtime node execution; gpu_busy/gpu_util are kernel time on the execution thread per step',
      'cpu: no Tensor Cores, so tensorcore_pct is 0',
      "cpu: peak_vram_mb is the peak of ORT's CPU arena (mem_in_use_peak); peak_rss_mb is the process resident set",
      'cpu: cuda_mallocs_per_step counts ORT arena growths (mem_arena_held_delta > 0) per step',
    ];
  }
  return ['this ONNX Runtime build reports no device kernel events: kernel times are ORT node times on the host, not device busy time'];
}

export interface AnalyzeOptions {
  summary?: ProfileSummary;
  /** Path recorded in the profile's `trace` field (as given). */
  tracePath?: string | null;
}

export function analyzeTrace(data: unknown, options: AnalyzeOptions = {}): ProfileAnalysis {
  const summary = options.summary ?? {};
  const events = traceEventsOf(data).filter((e): e is TraceEvent => Boolean(e) && typeof e === 'object' && e.ph === 'X');
  const markers = events.filter((e) => String(e.name ?? '').startsWith(STEP_MARKER)).sort((a, b) => (a.ts ?? 0) - (b.ts ?? 0));
  const win = pickWindow(markers);
  const n = win.steps;
  const inWindow = (ts: number): boolean => win.start === null || (win.start <= ts && ts < win.end!);
  const deviceKernels = events.some((e) => e.cat === 'kernel' || e.cat === 'Kernel');

  let gpuBusyUs = 0, kernelCount = 0, tcUs = 0, memcpyUs = 0, mallocs = 0, arenaPeak = 0;
  const kern: Agg = new Map();
  const ops: Agg = new Map();
  const kernelList: Array<[string, number, number]> = [];
  const opList: Array<[string, number, number]> = [];
  const phaseGpu = new Map<string, number>();
  const cpuIntervals = new Map<string, Array<[number, number]>>();
  const providers = new Set<string>();
  let nodeKernels = false;

  for (const e of events) {
    if (typeof e.ts !== 'number' || !inWindow(e.ts)) continue;
    const dur = e.dur || 0;
    const name = String(e.name ?? '');
    if (e.cat === 'Node') {
      // ORT's arena counters ride on node events: growth is an allocation, the peak is device memory.
      if (Number(arg(e, 'mem_arena_held_delta')) > 0) mallocs++;
      arenaPeak = Math.max(arenaPeak, Number(arg(e, 'mem_in_use_peak')) || 0);
      const provider = arg(e, 'provider');
      if (typeof provider === 'string') providers.add(provider);
    }
    const kind = kindOf(e, name, deviceKernels);
    const key = e.cat === 'Node' ? ortKey(e) : name;
    switch (kind) {
      case 'kernel':
        nodeKernels ||= e.cat === 'Node';
        gpuBusyUs += dur;
        kernelCount++;
        if (isTensorCore(key)) tcUs += dur;
        add(kern, key, dur);
        kernelList.push([key, dur, e.ts]);
        break;
      case 'memcpy': memcpyUs += dur; break;
      case 'malloc': mallocs++; break;
      case 'op':
        add(ops, key, dur);
        opList.push([key, dur, e.ts]);
        break;
      case 'phase_gpu': {
        const p = name.slice(PHASE_PREFIX.length);
        phaseGpu.set(p, (phaseGpu.get(p) ?? 0) + dur);
        break;
      }
      case 'phase_cpu': {
        const p = name.slice(PHASE_PREFIX.length);
        if (!cpuIntervals.has(p)) cpuIntervals.set(p, []);
        cpuIntervals.get(p)!.push([e.ts, e.ts + dur]);
        break;
      }
    }
  }

  // Phase of a timestamp: the earliest-starting host phase span containing it.
  const intervals = [...cpuIntervals].flatMap(([p, ivs]) => ivs.map(([s, t]) => [s, t, p] as const))
    .sort((a, b) => a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0));
  const phaseOf = (ts: number): string => {
    for (const [s, t, p] of intervals) {
      if (s > ts) break;
      if (ts < t) return p;
    }
    return 'unphased';
  };
  const phaseKern = new Map<string, Agg>();
  const phaseOp = new Map<string, Agg>();
  const phaseKcount = new Map<string, number>();
  const phaseOcount = new Map<string, number>();
  const phaseGpuUs = new Map<string, number>();
  for (const [key, dur, ts] of kernelList) {
    const p = phaseOf(ts);
    if (!phaseKern.has(p)) phaseKern.set(p, new Map());
    add(phaseKern.get(p)!, key, dur);
    phaseKcount.set(p, (phaseKcount.get(p) ?? 0) + 1);
    phaseGpuUs.set(p, (phaseGpuUs.get(p) ?? 0) + dur);
  }
  for (const [key, dur, ts] of opList) {
    const p = phaseOf(ts);
    if (!phaseOp.has(p)) phaseOp.set(p, new Map());
    add(phaseOp.get(p)!, key, dur);
    phaseOcount.set(p, (phaseOcount.get(p) ?? 0) + 1);
  }

  const krow = (name: string, [us, count]: [number, number], denom: number): KernelRow => ({
    kernel: friendlyKernel(name), raw_name: name.slice(0, 90), category: kernelCategory(name), tensorcore: isTensorCore(name),
    ms_per_step: pyRound(us / 1000 / n, 4), pct_of_gpu: pyRound((us / denom) * 100, 2), count_per_step: Math.max(Math.floor(count / n), 1),
  });
  const orow = (name: string, [us, count]: [number, number], denom: number): OpRow => ({
    op: name.slice(0, 70), ms_per_step: pyRound(us / 1000 / n, 4), pct_of_cpu_ops: pyRound((us / denom) * 100, 2),
    count_per_step: Math.max(Math.floor(count / n), 1),
  });
  const kernelRows = (m: Agg, denom: number): KernelRow[] => byDesc([...m].map(([k, v]) => krow(k, v, denom)), (r) => r.pct_of_gpu);
  const opRows = (m: Agg, denom: number): OpRow[] => byDesc([...m].map(([k, v]) => orow(k, v, denom)), (r) => r.pct_of_cpu_ops);

  const tot = gpuBusyUs || 1;
  const kernels = kernelRows(kern, tot);
  const catUs = new Map<string, number>();
  for (const [k, [us]] of kern) catUs.set(kernelCategory(k), (catUs.get(kernelCategory(k)) ?? 0) + us);
  const categories: CategoryRow[] = byDesc([...catUs].filter(([, us]) => us > 0), ([, us]) => us)
    .map(([name, us]) => ({ name, pct: pyRound((us / tot) * 100, 1), ms_per_step: pyRound(us / 1000 / n, 3) }));
  const opRowsAll = opRows(ops, sumUs(ops) || 1);

  const real = summary.real ?? {};
  const comp = summary.composition_ms ?? {};
  const wallMs = win.start !== null ? (win.end! - win.start) / 1000 : 0;
  // A trace taken in its own steps is the only timing that matches its kernels: utilisation, host
  // overhead and phase walls then come from the trace's steps and phase spans.
  const separate = summary.trace_window?.separate === true && wallMs > 0;
  const phaseWallMs = (p: string): number | undefined => {
    const iv = cpuIntervals.get(p);
    return separate && iv ? iv.reduce((a, [s, t]) => a + (t - s), 0) / 1000 / n : undefined;
  };
  const present = new Set([...phaseGpu.keys(), ...phaseKern.keys(), ...phaseOp.keys()]);
  const phaseNames: string[] = PHASE_ORDER.filter((p) => present.has(p));
  for (const p of phaseKern.keys()) if (!phaseNames.includes(p)) phaseNames.push(p);
  const phases: PhaseRow[] = [];
  const kernelsByPhase: Record<string, KernelRow[]> = {};
  const opsByPhase: Record<string, OpRow[]> = {};
  for (const p of phaseNames) {
    kernelsByPhase[p] = kernelRows(phaseKern.get(p) ?? new Map(), sumUs(phaseKern.get(p)) || 1).slice(0, 40);
    opsByPhase[p] = opRows(phaseOp.get(p) ?? new Map(), sumUs(phaseOp.get(p)) || 1).slice(0, 40);
    const wall = (p === 'dataload' ? real.dataload_ms : comp[p]) ?? phaseWallMs(p);
    phases.push({
      phase: p,
      gpu_ms_per_step: pyRound((phaseGpuUs.get(p) ?? 0) / 1000 / n, 3),
      wall_ms_per_step: wall === undefined || wall === null ? null : pyRound(wall, 2),
      kernels_per_step: Math.floor((phaseKcount.get(p) ?? 0) / n),
      ops_per_step: Math.floor((phaseOcount.get(p) ?? 0) / n),
      unique_kernels: phaseKern.get(p)?.size ?? 0,
    });
  }

  const stepMs = real.step_ms || wallMs / n;
  const deviceStepMs = separate ? wallMs / n : stepMs;
  const gpuBusyMs = gpuBusyUs / 1000 / n;
  const utilRaw = deviceStepMs ? gpuBusyMs / deviceStepMs : 0;
  const util = Math.min(utilRaw, 1);
  const mallocsPerStep = Math.floor(mallocs / n);
  const memoryPressure = mallocsPerStep >= 5 || utilRaw > 1.05;
  const hostMs = Math.max(deviceStepMs - gpuBusyMs - (real.dataload_ms || 0), 0);
  const launches = Math.floor(kernelCount / n);
  const peakVram = summary.analysis?.peak_vram_mb ?? (arenaPeak ? pyRound(arenaPeak / 1e6, 1) : null);
  const rss = traceEventsOf(data).filter((e) => e?.ph === 'C' && e.name === 'memory').map((e) => Number(arg(e, 'rss_mb')) || 0);
  const rssPeaks = [...rss, ...(typeof summary.peak_rss_mb === 'number' ? [summary.peak_rss_mb] : [])];
  const peakRss = rssPeaks.length ? pyRound(Math.max(...rssPeaks), 1) : null;

  let bound = summary.bound || '';
  let why = summary.bound_why ?? '';
  if (!bound) {
    bound = util >= 0.8 ? 'compute' : 'host / launch';
    why = util >= 0.8
      ? `GPU ~${pyFixed(util * 100, 0)}% busy`
      : `GPU only ~${pyFixed(util * 100, 0)}% busy — tiny kernels / host overhead (dataloader stall not measurable from trace alone)`;
  }
  if (memoryPressure) {
    bound = 'memory-pressure';
    why = `allocator thrash (~${mallocsPerStep} cudaMalloc/free per step${utilRaw > 1.05 ? `; util read ${pyFixed(utilRaw * 100, 0)}%` : ''}) — VRAM pressure; throughput and utilisation here are unreliable`;
  }

  const a: ProfileAnalysis = {
    schema: SCHEMA,
    ...(typeof summary.meta?.mode === 'string' ? { mode: summary.meta.mode } : {}),
    trace: options.tracePath ?? null,
    model: (summary.meta?.model as string | undefined) ?? null,
    config: summary.meta ?? {},
    bound,
    bound_why: why,
    step_ms: pyRound(stepMs, 2),
    img_per_s: real.img_per_s ?? null,
    dataload_ms: real.dataload_ms ?? null,
    dataload_frac: real.dataload_frac ?? null,
    gpu_util: pyRound(util, 3),
    gpu_util_raw: pyRound(utilRaw, 3),
    memory_pressure: memoryPressure,
    cuda_mallocs_per_step: mallocsPerStep,
    host_overhead_ms_per_step: pyRound(hostMs, 2),
    launches_per_step: launches,
    gpu_busy_ms_per_step: pyRound(gpuBusyMs, 2),
    mean_kernel_us: kernelCount ? pyRound(gpuBusyUs / kernelCount, 2) : 0,
    kernels_per_step: launches,
    unique_kernels: kern.size,
    memcpy_ms_per_step: pyRound(memcpyUs / 1000 / n, 3),
    tensorcore_pct: gpuBusyUs ? pyRound((tcUs / gpuBusyUs) * 100, 1) : 0,
    peak_vram_mb: peakVram,
    ...(peakRss !== null ? { peak_rss_mb: peakRss } : {}),
    window: { wall_ms: pyRound(wallMs, 1), real_steps: n },
    ...(separate ? { trace_window: traceWindowOf(summary, pyRound(deviceStepMs, 2), phaseWallMs('forward')) } : {}),
    ...(summary.latency ? { latency: summary.latency } : {}),
    ...(summary.stages_ms ? { stages_ms: summary.stages_ms } : {}),
    metrics: {},
    categories,
    phases,
    phases_gpu: phases.map((p) => ({ phase: p.phase, gpu_ms_per_step: p.gpu_ms_per_step })),
    kernels_by_phase: kernelsByPhase,
    ops_by_phase: opsByPhase,
    top_kernels: kernels.slice(0, 8),
    kernels,
    ops: opRowsAll,
  };
  const notes = [...(summary.notes ?? []), ...notesFor(providers, nodeKernels)];
  if (notes.length) a.notes = notes;
  a.metrics = metricsOf(a, Math.floor(opList.length / n));
  return a;
}

function traceWindowOf(summary: ProfileSummary, stepMs: number, forwardMs: number | undefined): TraceWindow {
  const timed = summary.stages_ms?.forward;
  return {
    ...summary.trace_window!, step_ms: stepMs, forward_ms: forwardMs === undefined ? null : pyRound(forwardMs, 3),
    profiler_overhead_pct: forwardMs !== undefined && timed ? pyRound((forwardMs / timed - 1) * 100, 1) : null,
  };
}

/** The flat `metrics` map `profile get` reads (the original's keys and order). */
function metricsOf(a: ProfileAnalysis, opsPerStep: number): Metrics {
  const m: Metrics = {
    img_per_s: a.img_per_s, step_ms: a.step_ms, dataload_ms: a.dataload_ms, dataload_frac: a.dataload_frac,
    gpu_util: a.gpu_util, gpu_busy_ms: a.gpu_busy_ms_per_step, mean_kernel_us: a.mean_kernel_us,
    kernels_per_step: a.kernels_per_step, unique_kernels: a.unique_kernels, ops_per_step: opsPerStep,
    memcpy_ms: a.memcpy_ms_per_step, tensorcore_pct: a.tensorcore_pct, peak_vram_mb: a.peak_vram_mb,
    ...(a.peak_rss_mb !== undefined ? { peak_rss_mb: a.peak_rss_mb } : {}),
    host_overhead_ms: a.host_overhead_ms_per_step, launches_per_step: a.launches_per_step,
    cuda_mallocs_per_step: a.cuda_mallocs_per_step, memory_pressure: a.memory_pressure, bound: a.bound,
  };
  for (const p of a.phases) {
    m[`${p.phase}_gpu_ms`] = p.gpu_ms_per_step;
    m[`${p.phase}_wall_ms`] = p.wall_ms_per_step;
    m[`${p.phase}_kernels`] = p.kernels_per_step;
    m[`${p.phase}_ops`] = p.ops_per_step;
  }
  if (a.latency && a.stages_ms) Object.assign(m, inferenceMetrics(a));
  return m;
}

/** Metrics an inference profile adds (latency percentiles and the stage split). */
export function inferenceMetrics(a: Pick<ProfileAnalysis, 'latency' | 'stages_ms' | 'img_per_s' | 'bound'>): Metrics {
  return {
    latency_p50_ms: a.latency?.p50_ms ?? null, latency_p90_ms: a.latency?.p90_ms ?? null, latency_p99_ms: a.latency?.p99_ms ?? null,
    throughput_img_s: a.img_per_s, preprocess_ms: a.stages_ms?.preprocess ?? null, forward_ms: a.stages_ms?.forward ?? null,
    nms_ms: a.stages_ms?.postprocess ?? null, bound: a.bound,
  };
}

/** Sets the verdict, unless the analysis found memory pressure (then its own verdict stands). */
export function applyVerdict(a: ProfileAnalysis, bound: string, why: string): ProfileAnalysis {
  if (a.memory_pressure) return a;
  a.bound = bound;
  a.bound_why = why;
  a.metrics.bound = bound;
  return a;
}
