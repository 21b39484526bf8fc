/**
 * The verdicts: which stage bounds an inference step, and what bounds a train step.
 *
 * Inference: which stage bounds the step. Postprocess and preprocess are judged by
 * their share of the step, as in the original. When the forward pass dominates, a CPU profile with
 * a trace can tell compute from host work: ORT kernel time against the forward call's time, the
 * remainder being worker hand-off, tensor copies and session overhead. On other devices the
 * original's device-utilisation rule applies, and only when the build reports device kernels.
 */
import { pyFixed, pyRound } from './pyfmt.ts';
import type { ProfileAnalysis, ProfileSummary } from './schema.ts';

export interface Verdict {
  bound: string;
  why: string;
}

export interface StageTimes {
  /** Mean per-step stage times (ms). */
  pre: number;
  fwd: number;
  post: number;
}

/** A share of the step at or above which a host stage is the bottleneck (when it also beats forward). */
export const STAGE_SHARE = 0.35;
/**
 * On CPU, the forward call is host-bound when ORT kernels fill less than this share of it. Kernels
 * normally fill 85-95% (one tensor copy each way plus per-run session overhead), so below 60% the
 * fixed per-call cost, not the network, is what a larger batch or larger inputs would amortise.
 */
export const CPU_KERNEL_SHARE = 0.6;
/** On a GPU, the device is saturated from this utilisation up (the original's threshold). */
export const GPU_UTIL = 0.8;

export interface DeviceTiming {
  cpu: boolean;
  /** Device utilisation from device kernel events (GPU), or null when unknown. */
  util: number | null;
  /** On CPU with a trace: ORT kernel time and the forward call time of the same steps (ms). */
  busy: { kernelMs: number; forwardMs: number } | null;
}

export function inferenceVerdict(t: StageTimes, device: DeviceTiming): Verdict {
  const step = t.pre + t.fwd + t.post;
  if (step <= 0) return { bound: 'inference', why: 'insufficient timing to classify' };
  const frPost = t.post / step;
  const frPre = t.pre / step;
  if (t.post >= t.fwd && frPost >= STAGE_SHARE) {
    return {
      bound: 'nms / postprocess',
      why: `postprocess (NMS) is ~${pyFixed(frPost * 100, 0)}% of the step (${pyFixed(t.post, 2)} ms) — try lower max_det, higher conf, fewer classes, or an NMS-free / end-to-end model`,
    };
  }
  if (t.pre >= t.fwd && frPre >= STAGE_SHARE) {
    return {
      bound: 'preprocess',
      why: `preprocess is ~${pyFixed(frPre * 100, 0)}% of the step (${pyFixed(t.pre, 2)} ms) — CPU resize/letterbox dominates; try a larger batch, faster decode, or GPU preprocessing`,
    };
  }
  if (device.cpu) {
    const b = device.busy;
    if (b && b.forwardMs > 0) {
      const share = b.kernelMs / b.forwardMs;
      if (share < CPU_KERNEL_SHARE) {
        return {
          bound: 'host / launch',
          why: `forward dominates but ORT kernels fill only ~${pyFixed(share * 100, 0)}% of the forward call (${pyFixed(b.kernelMs, 2)} of ${pyFixed(b.forwardMs, 2)} ms) — the rest is host/JS work (worker hand-off, tensor copies, session overhead); try a larger batch or larger inputs per call`,
        };
      }
      return { bound: 'compute', why: `forward dominates the step (${pyFixed(t.fwd, 2)} ms) — CPU-bound; ORT kernels fill ~${pyFixed(Math.min(share, 1) * 100, 0)}% of the forward call` };
    }
    return { bound: 'compute', why: `forward dominates the step (${pyFixed(t.fwd, 2)} ms) — CPU-bound` };
  }
  if (device.util !== null && device.util < GPU_UTIL) {
    return {
      bound: 'host / launch',
      why: `forward dominates but the GPU is only ~${pyFixed(device.util * 100, 0)}% busy — small model / tiny kernels; try a larger batch or a bigger model`,
    };
  }
  return { bound: 'compute', why: `forward dominates the step (${pyFixed(t.fwd, 2)} ms)${device.util !== null ? `; GPU ~${pyFixed(device.util * 100, 0)}% busy` : ''}` };
}

/**
 * The original's `_refine_verdict`, with the device busy time from ORT's kernels: on CPU the
 * kernels' share of the real step decides compute-bound (>= 60%) from host-bound, on GPUs the
 * original's 80% utilisation rule applies.
 */
export function refineTrainVerdict(a: ProfileAnalysis, summary: ProfileSummary, cpu: boolean): Verdict {
  const stepMs = summary.real?.step_ms ?? 0;
  const dl = summary.real?.dataload_frac ?? 0;
  const util = stepMs > 0 ? a.gpu_busy_ms_per_step / stepMs : a.gpu_util;
  a.gpu_util_raw = pyRound(util, 3);
  a.gpu_util = pyRound(Math.min(util, 1), 3);
  a.metrics.gpu_util = a.gpu_util;
  const pressure = a.cuda_mallocs_per_step >= 5 || util > 1.05;
  if (pressure) {
    return { bound: 'memory-pressure', why: `allocator/VRAM pressure (~${a.cuda_mallocs_per_step} allocations per step); throughput and utilisation are unreliable` };
  }
  if (dl >= 0.2) return { bound: 'dataloader', why: `the ${cpu ? 'CPU' : 'GPU'} waits on input data (~${pyFixed(dl * 100, 0)}% of the step)` };
  const threshold = cpu ? CPU_KERNEL_SHARE : GPU_UTIL;
  if (a.gpu_util >= threshold) {
    return { bound: 'compute', why: cpu ? `ORT kernels fill ~${pyFixed(a.gpu_util * 100, 0)}% of the step: CPU-bound in the network's own math` : `the GPU is saturated (~${pyFixed(a.gpu_util * 100, 0)}% busy)` };
  }
  return {
    bound: 'host / launch',
    why: `${cpu ? 'ORT kernels fill' : 'GPU only'} ~${pyFixed(a.gpu_util * 100, 0)}% of the step \u2014 the rest is host work: ${a.kernels_per_step} kernels/step at ~${pyFixed(a.mean_kernel_us, 0)}us each, ` +
      'parameter/gradient hand-off to the session worker, and the optimizer update on the host',
  };
}
