/**
 * `batch=-1`: the largest batch whose training step fits a memory budget. As the
 * original: probe real train steps (forward + loss + backward) at batch 1, 2, 4, ..., record the
 * peak memory of each, fit a line, and take the largest power of two strictly below the batch the
 * line puts at `fraction` (0.60) of the device's memory, clamped to [1, 1024] (and to `nbs` when
 * set). On the CPU the memory is the process's peak RSS over each probe step (its peak mark reset
 * before the step; each session is released before the next):
 * what the run will hold, weights, host copies and allocator slack included, where ONNX Runtime's
 * arena accounting missed a third of it (yolo9t at 320: 41 MB per image in the arena, 52-63 MiB
 * of RSS). On a GPU it is ORT's arena peak (`mem_in_use_peak` of the step session's profile), the
 * device's own memory. The probe sessions run the graph as built (optimisation off: 18 s instead
 * of 55 s for yolo9t's three probes at 320; the arena peaks of the optimised graph are within 10%).
 * The device total is the machine's RAM on CPU and `nvidia-smi`'s figure on CUDA; where neither is
 * known the batch stays 16.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { trainingHooks, type DetectionNetwork, type ModelFamily } from '../models/registry.ts';
import type { TrainBatch } from '../data/train-batch.ts';
import type { Device } from '../runtime/device.ts';
import { findOrtFile } from '../runtime/ort-profile-file.ts';
import { peakRssKb, resetPeakRss } from '../util/peak-rss.ts';
import { TrainStep } from './step.ts';

export const AUTOBATCH_FRACTION = 0.6;
export const AUTOBATCH_DEFAULT = 16;

export interface AutoBatchPoint {
  batch: number;
  /** Peak memory of the step (MB). */
  mb: number;
}

export interface AutoBatchResult {
  batch: number;
  points: AutoBatchPoint[];
  /** Device memory total (MB), or null when unknown. */
  totalMb: number | null;
  fraction: number;
  /** One line for the log: what was measured and chosen. */
  message: string;
}

/**
 * The original's fit: a least-squares line through (batch, MB); with fewer than two points or a
 * non-positive slope, the default. `raw = (fraction * total - intercept) / slope`; the result is
 * the largest power of two strictly below `raw` (1 when raw <= 2), clamped to [1, 1024].
 */
export function fitAutoBatch(points: readonly AutoBatchPoint[], totalMb: number, fraction = AUTOBATCH_FRACTION): number | null {
  if (points.length < 2) return null;
  const n = points.length;
  const mx = points.reduce((a, p) => a + p.batch, 0) / n;
  const my = points.reduce((a, p) => a + p.mb, 0) / n;
  let sxy = 0, sxx = 0;
  for (const p of points) {
    sxy += (p.batch - mx) * (p.mb - my);
    sxx += (p.batch - mx) ** 2;
  }
  if (sxx === 0) return null;
  const slope = sxy / sxx;
  if (!(slope > 0)) return null;
  const intercept = my - slope * mx;
  const raw = (fraction * totalMb - intercept) / slope;
  if (raw <= 2) return 1;
  let b = 1;
  while (b * 2 < raw) b *= 2;
  return Math.min(Math.max(b, 1), 1024);
}

/** Total memory of the device in MB, or null when it cannot be read. */
export function deviceMemoryMb(device: Device): number | null {
  if (device.kind === 'cpu') return totalmem() / 1e6;
  if (device.kind === 'cuda') {
    try {
      const out = execFileSync('nvidia-smi', ['--query-gpu=memory.total', '--format=csv,noheader,nounits', '-i', String(device.index)], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] });
      const mib = Number(out.trim().split('\n')[0]);
      return Number.isFinite(mib) && mib > 0 ? mib * 1.048576 : null;
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * The step's peak RSS (MB): the process's peak since `resetPeakRss` when that worked, else its RSS
 * now, right after the step (the arena still holds the step's peak then). The process's own
 * high-water mark would not do: whatever ran before the probe (a dataset scan, an earlier run) may
 * have set it higher than any probe step.
 */
function probeRssMb(reset: boolean): number {
  return ((reset ? peakRssKb() : process.memoryUsage().rss / 1024) * 1024) / 1e6;
}

/** Peak arena memory (MB) in an ORT profile file, or null when the provider reports none. */
async function peakFromProfile(prefix: string): Promise<number | null> {
  const file = await findOrtFile(prefix);
  if (!file) return null;
  const events = JSON.parse(await readFile(file, 'utf8')) as Array<{ args?: Record<string, unknown> }>;
  let peak = 0;
  for (const e of events) {
    const v = Number(e.args?.mem_in_use_peak);
    if (Number.isFinite(v) && v > peak) peak = v;
  }
  return peak > 0 ? peak / 1e6 : null;
}

/** A reproducible probe batch: mid-grey images with one box each (and its filled box as the mask, for a network that trains masks). */
function probeBatch(batch: number, imgsz: number, maxTargets: number, maskRatio: number | null): TrainBatch {
  const targets = new Float32Array(batch * maxTargets * 5);
  for (let i = 0; i < batch * maxTargets; i++) targets[i * 5] = -1;
  for (let b = 0; b < batch; b++) targets.set([0, 0.25, 0.25, 0.75, 0.75], b * maxTargets * 5);
  return {
    images: { dtype: 'float32', dims: [batch, 3, imgsz, imgsz], data: new Float32Array(batch * 3 * imgsz * imgsz).fill(0.45) },
    targets: { dtype: 'float32', dims: [batch, maxTargets, 5], data: targets },
    ...(maskRatio ? { masks: probeMasks(batch, imgsz / maskRatio, maxTargets) } : {}),
  };
}

function probeMasks(batch: number, m: number, maxTargets: number): TrainBatch['targets'] {
  const data = new Float32Array(batch * maxTargets * m * m);
  for (let b = 0; b < batch; b++) {
    for (let y = m >> 2; y < (3 * m) >> 2; y++) data.fill(1, b * maxTargets * m * m + y * m + (m >> 2), b * maxTargets * m * m + y * m + ((3 * m) >> 2));
  }
  return { dtype: 'float32', dims: [batch, maxTargets, m, m], data };
}

export interface AutoBatchOptions {
  device: Device;
  imgsz: number;
  maxTargets: number;
  threads?: number;
  fraction?: number;
  /** Largest batch probed and returned (`nbs`, else 64 for the probe). */
  nbs?: number | null;
  /** Batches probed (default 1, 2, 4: enough for the line; larger ones only cost time on CPU). */
  probe?: number[];
  log?: (line: string) => void;
}

export async function probeAutoBatch(family: ModelFamily, network: DetectionNetwork, o: AutoBatchOptions): Promise<AutoBatchResult> {
  const fraction = o.fraction ?? AUTOBATCH_FRACTION;
  const totalMb = deviceMemoryMb(o.device);
  if (totalMb === null) {
    return { batch: AUTOBATCH_DEFAULT, points: [], totalMb: null, fraction, message: `AutoBatch: the memory of ${o.device.id} cannot be read; using batch=${AUTOBATCH_DEFAULT}.` };
  }
  const cap = o.nbs ?? 64;
  const sizes = (o.probe ?? [1, 2, 4]).filter((b) => b <= cap).sort((a, b) => a - b);
  const cpu = o.device.kind === 'cpu';
  const dir = await mkdtemp(join(tmpdir(), 'libreyolo-autobatch-'));
  const points: AutoBatchPoint[] = [];
  try {
    for (const b of sizes) {
      const prefix = join(dir, `b${b}`);
      let step: TrainStep | null = null;
      let cpuMb: number | null = null;
      try {
        const reset = cpu && resetPeakRss();
        step = await TrainStep.create(family, network, {
          device: o.device, batch: b, imgsz: [o.imgsz, o.imgsz], maxTargets: o.maxTargets, optimizationLevel: 'disabled',
          ...(cpu ? {} : { profileFilePrefix: prefix }), ...(o.threads ? { threads: o.threads } : {}),
        });
        await step.run(probeBatch(b, o.imgsz, o.maxTargets, trainingHooks(family).maskRatio?.(network) ?? null));
        if (cpu) cpuMb = probeRssMb(reset);
        else await step.endProfiling();
      } catch (err) {
        o.log?.(`AutoBatch: batch ${b} failed (${(err as Error).message.split('\n')[0]}); stopping the probe.`);
        break;
      } finally {
        await step?.close();
      }
      const mb = cpu ? cpuMb : await peakFromProfile(prefix);
      if (mb === null) break;
      points.push({ batch: b, mb });
      if (mb > 0.9 * totalMb) break;
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const fit = fitAutoBatch(points, totalMb, fraction);
  const batch = fit === null ? AUTOBATCH_DEFAULT : Math.min(fit, o.nbs ?? 1024);
  const measured = points.map((p) => `b${p.batch}: ${p.mb.toFixed(0)} MB`).join(', ');
  const message = fit === null
    ? `AutoBatch: could not fit the memory probe (${measured || 'no memory figures'}); using batch=${AUTOBATCH_DEFAULT}.`
    : `AutoBatch: batch=${batch} fits ${(fraction * 100).toFixed(0)}% of ${(totalMb / 1024).toFixed(1)} GB on ${o.device.id} (probe ${measured}).`;
  return { batch, points, totalMb, fraction, message };
}
