/**
 * Trace analysis: a Chrome trace (ours, ONNX Runtime's, or torch.profiler's) plus the measuring
 * loop's summary -> a self-contained `profile.json`. The rules are the original's: a window of
 * steady-state steps, kernels attributed to phases by their start time against the host phase spans,
 * per-step averages, and a verdict. What counts as a "kernel" depends on the trace: device kernels
 * when it has them, otherwise ORT node executions (on CPU, the actual compute).
 */
import { LIMIT, ProfileSchemaError } from './validate.ts';
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

/**
 * The event list of an in-memory trace: an array, or an object's `traceEvents`. Anything else is
 * not a trace, and says which field is wrong.
 */
export function traceEventsOf(data: unknown): TraceEvent[] {
  if (Array.isArray(data)) return data as TraceEvent[];
  if (data && typeof data === 'object') {
    if (!('traceEvents' in data)) throw new Error("not a profile (no 'schema' field) and not a trace (no 'traceEvents' field)");
    const ev = (data as { traceEvents?: unknown }).traceEvents;
    if (!Array.isArray(ev)) throw new Error(`traceEvents must be an array of events, got ${ev === null ? 'null' : typeof ev}`);
    return ev as TraceEvent[];
  }
  throw new Error('a trace must be a JSON object or an array of events');
}

const arg = (e: TraceEvent, key: string): unknown => (e.args && typeof e.args === 'object' ? e.args[key] : undefined);
/**
 * A complete event's duration (µs), 0 when it has none. A duration that no measurement gives (not a
 * number, negative, or over LIMIT: 1e110 ms would be printed as if real) makes the trace unreadable,
 * as a profile.json with such a field is (validate.ts).
 */
function durOf(e: TraceEvent): number {
  const d: unknown = e.dur;
  if (d === undefined) return 0;
  if (typeof d !== 'number' || !Number.isFinite(d) || d < 0 || d > LIMIT) {
    const shown = typeof d === 'string' ? JSON.stringify(d.length > 40 ? `${d.slice(0, 40)}...` : d) : typeof d === 'object' ? (d === null ? 'null' : 'an object') : String(d);
    throw new ProfileSchemaError(`event '${String(e.name ?? '').slice(0, 80)}': field 'dur' must be a finite number of microseconds in [0, ${LIMIT}], got ${shown}`);
  }
  return d;
}
const hasTs = (e: TraceEvent): e is TraceEvent & { ts: number } => typeof e.ts === 'number' && Number.isFinite(e.ts);

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

function bump(map: Map<string, number>, key: string, v: number): void {
  map.set(key, (map.get(key) ?? 0) + v);
}

/**
 * Phase of a timestamp: the earliest-starting host phase span containing it (ties: the shorter,
 * then by name), else `unphased`. The spans are swept once into disjoint segments, each with its
 * phase, so a lookup is a binary search however many spans and events there are.
 */
class PhaseMap {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private readonly phases: string[] = [];

  constructor(spans: ReadonlyArray<readonly [number, number, string]>) {
    const iv = [...spans].sort((a, b) => a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0));
    const cuts = [...new Set(iv.flatMap(([s, t]) => [s, t]))].sort((a, b) => a - b);
    // Active spans by their order in `iv` (a min-heap of indices; ended ones are dropped lazily).
    const heap: number[] = [];
    const push = (x: number): void => {
      heap.push(x);
      for (let i = heap.length - 1; i > 0;) {
        const p = (i - 1) >> 1;
        if (heap[p]! <= heap[i]!) break;
        [heap[p], heap[i]] = [heap[i]!, heap[p]!];
        i = p;
      }
    };
    const pop = (): void => {
      const last = heap.pop()!;
      if (!heap.length) return;
      heap[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < heap.length && heap[l]! < heap[m]!) m = l;
        if (r < heap.length && heap[r]! < heap[m]!) m = r;
        if (m === i) break;
        [heap[m], heap[i]] = [heap[i]!, heap[m]!];
        i = m;
      }
    };
    let next = 0;
    for (let k = 0; k + 1 < cuts.length; k++) {
      const a = cuts[k]!, b = cuts[k + 1]!;
      while (next < iv.length && iv[next]![0] <= a) push(next++);
      while (heap.length && iv[heap[0]!]![1] <= a) pop();
      if (!heap.length) continue;
      const phase = iv[heap[0]!]![2];
      if (this.phases.length && this.phases[this.phases.length - 1] === phase && this.ends[this.ends.length - 1] === a) this.ends[this.ends.length - 1] = b;
      else {
        this.starts.push(a);
        this.ends.push(b);
        this.phases.push(phase);
      }
    }
  }

  at(ts: number): string {
    let lo = 0, hi = this.starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.starts[mid]! <= ts) lo = mid + 1; else hi = mid;
    }
    const k = lo - 1;
    return k >= 0 && ts < this.ends[k]! ? this.phases[k]! : 'unphased';
  }
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

/** Receives each in-window event of the second pass (the timeline curates from it). */
export interface TraceObserver {
  /** The window chosen (µs) and the step markers inside it. */
  window(start: number | null, end: number | null, markers: readonly TraceEvent[]): void;
  /** An in-window event the analysis classified, with its phase (kernels, ops, phase spans). */
  event(e: TraceEvent, kind: Kind, phase: string): void;
  /** A memory counter sample (anywhere in the trace). */
  counter(e: TraceEvent): void;
}

export type { Kind as EventKind };

/**
 * The analysis as two passes over the events, so a trace file can be streamed through it: pass 1
 * finds the step markers, the host phase spans, the memory counters and whether the trace has
 * device kernels; pass 2 aggregates the events inside the window, each attributed to its phase as
 * it goes. Only aggregates (one row per kernel or op name) are held, never the event list.
 */
export class TraceAnalyzer {
  private readonly markers: TraceEvent[] = [];
  private readonly phaseSpans: Array<[number, number, string]> = [];
  private deviceKernels = false;
  private rssMax: number | null = null;
  private complete = 0;
  private win: ReturnType<typeof pickWindow> = { start: null, end: null, steps: 1 };
  private phaseMap: PhaseMap = new PhaseMap([]);

  private gpuBusyUs = 0; private kernelCount = 0; private tcUs = 0; private memcpyUs = 0; private mallocs = 0; private arenaPeak = 0;
  private opCount = 0;
  private readonly kern: Agg = new Map();
  private readonly ops: Agg = new Map();
  private readonly phaseGpu = new Map<string, number>();
  private readonly cpuIntervals = new Map<string, Array<[number, number]>>();
  private readonly providers = new Set<string>();
  private nodeKernels = false;
  private readonly phaseKern = new Map<string, Agg>();
  private readonly phaseOp = new Map<string, Agg>();
  private readonly phaseKcount = new Map<string, number>();
  private readonly phaseOcount = new Map<string, number>();
  private readonly phaseGpuUs = new Map<string, number>();

  constructor(private readonly observer?: TraceObserver) {}

  pass1(e: TraceEvent): void {
    if (!e || typeof e !== 'object') return;
    if (e.ph === 'C' && e.name === 'memory') {
      const mb = Number(arg(e, 'rss_mb')) || 0;
      this.rssMax = this.rssMax === null ? mb : Math.max(this.rssMax, mb);
      return;
    }
    if (e.ph !== 'X') return;
    this.complete++;
    const name = String(e.name ?? '');
    if (e.cat === 'kernel' || e.cat === 'Kernel') this.deviceKernels = true;
    if (name.startsWith(STEP_MARKER)) this.markers.push({ name, ...(hasTs(e) ? { ts: e.ts } : {}), dur: durOf(e) });
    if (e.cat === 'user_annotation' && name.startsWith(PHASE_PREFIX) && hasTs(e)) {
      this.phaseSpans.push([e.ts, e.ts + durOf(e), name.slice(PHASE_PREFIX.length)]);
    }
  }

  /** Between the passes: the window and the phase map. */
  endPass1(): void {
    if (!this.complete) throw new Error("the trace holds no complete ('ph': 'X') events");
    this.markers.sort((a, b) => (a.ts ?? 0) - (b.ts ?? 0));
    this.win = pickWindow(this.markers);
    const inside = this.phaseSpans.filter(([s]) => this.inWindow(s));
    for (const [s, t, p] of inside) {
      if (!this.cpuIntervals.has(p)) this.cpuIntervals.set(p, []);
      this.cpuIntervals.get(p)!.push([s, t]);
    }
    this.phaseMap = new PhaseMap(inside);
    this.observer?.window(this.win.start, this.win.end, this.markers);
  }

  private inWindow(ts: number): boolean {
    return this.win.start === null || (this.win.start <= ts && ts < this.win.end!);
  }

  pass2(e: TraceEvent): void {
    if (!e || typeof e !== 'object') return;
    if (e.ph === 'C' && e.name === 'memory') this.observer?.counter(e);
    if (e.ph !== 'X' || !hasTs(e) || !this.inWindow(e.ts)) return;
    const dur = durOf(e);
    const name = String(e.name ?? '');
    if (e.cat === 'Node') {
      // ORT's arena counters ride on node events: growth is an allocation, the peak is device memory.
      if (Number(arg(e, 'mem_arena_held_delta')) > 0) this.mallocs++;
      this.arenaPeak = Math.max(this.arenaPeak, Number(arg(e, 'mem_in_use_peak')) || 0);
      const provider = arg(e, 'provider');
      if (typeof provider === 'string') this.providers.add(provider);
    }
    const kind = kindOf(e, name, this.deviceKernels);
    const key = e.cat === 'Node' ? ortKey(e) : name;
    let phase = '';
    switch (kind) {
      case 'kernel':
        this.nodeKernels ||= e.cat === 'Node';
        this.gpuBusyUs += dur;
        this.kernelCount++;
        if (isTensorCore(key)) this.tcUs += dur;
        add(this.kern, key, dur);
        phase = this.phaseMap.at(e.ts);
        if (!this.phaseKern.has(phase)) this.phaseKern.set(phase, new Map());
        add(this.phaseKern.get(phase)!, key, dur);
        bump(this.phaseKcount, phase, 1);
        bump(this.phaseGpuUs, phase, dur);
        break;
      case 'memcpy': this.memcpyUs += dur; break;
      case 'malloc': this.mallocs++; break;
      case 'op':
        add(this.ops, key, dur);
        this.opCount++;
        phase = this.phaseMap.at(e.ts);
        if (!this.phaseOp.has(phase)) this.phaseOp.set(phase, new Map());
        add(this.phaseOp.get(phase)!, key, dur);
        bump(this.phaseOcount, phase, 1);
        break;
      case 'phase_gpu':
        bump(this.phaseGpu, name.slice(PHASE_PREFIX.length), dur);
        break;
      case 'phase_cpu':
        phase = name.slice(PHASE_PREFIX.length);
        break;
    }
    if (kind) this.observer?.event(e, kind, phase);
  }

  result(options: AnalyzeOptions = {}): ProfileAnalysis {
    const summary = options.summary ?? {};
    const win = this.win;
    const n = win.steps;
    const { kern, ops, phaseGpu, cpuIntervals, phaseKern, phaseOp, phaseKcount, phaseOcount, phaseGpuUs, gpuBusyUs, kernelCount, tcUs } = this;
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
    const mallocsPerStep = Math.floor(this.mallocs / n);
    const memoryPressure = mallocsPerStep >= 5 || utilRaw > 1.05;
    const hostMs = Math.max(deviceStepMs - gpuBusyMs - (real.dataload_ms || 0), 0);
    const launches = Math.floor(kernelCount / n);
    const peakVram = summary.analysis?.peak_vram_mb ?? (this.arenaPeak ? pyRound(this.arenaPeak / 1e6, 1) : null);
    let rssPeak = this.rssMax;
    if (typeof summary.peak_rss_mb === 'number') rssPeak = rssPeak === null ? summary.peak_rss_mb : Math.max(rssPeak, summary.peak_rss_mb);
    const peakRss = rssPeak === null ? null : pyRound(rssPeak, 1);

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
      memcpy_ms_per_step: pyRound(this.memcpyUs / 1000 / n, 3),
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
    const notes = [...(summary.notes ?? []), ...notesFor(this.providers, this.nodeKernels)];
    if (notes.length) a.notes = notes;
    a.metrics = metricsOf(a, Math.floor(this.opCount / n));
    return a;
  }
}

/** An in-memory trace (the object or array of a trace file) through both passes. */
export function analyzeTrace(data: unknown, options: AnalyzeOptions = {}): ProfileAnalysis {
  const events = traceEventsOf(data);
  const t = new TraceAnalyzer();
  for (const e of events) t.pass1(e);
  t.endPass1();
  for (const e of events) t.pass2(e);
  return t.result(options);
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
