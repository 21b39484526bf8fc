/**
 * The port a training profiler fills (the trainer declares it; `profile/train-profiler.ts` implements
 * it; whoever starts training passes one in `TrainRuntime.profiler`). `wrapLoader` times the data
 * wait, `phase` brackets each phase of a step, `step` ends an iteration; once `finished`, a
 * profile-then-stop run ends after that iteration without validating or checkpointing.
 */
import type { Device } from '../runtime/device.ts';
import type { StepRunner } from './runner.ts';

export type TrainPhase = 'to_device' | 'forward' | 'backward' | 'optimizer';

export interface TrainProfiler {
  wrapLoader<T>(batches: AsyncIterable<T>): AsyncIterable<T>;
  phase<T>(name: TrainPhase, fn: () => Promise<T>): Promise<T>;
  step(): Promise<void>;
  readonly finished: boolean;
  /** When set, the train-step sessions are created with ORT profiling on, under this prefix. */
  readonly ortProfilePrefix?: string;
  /** Called once the step runner exists. */
  attach?(runner: StepRunner): void;
  /** Releases what an unfinished profile holds (temp files); called when training ends. */
  close?(): Promise<void>;
}

/** What the trainer knows when it builds the profiler: the run directory, the window, the run's meta. */
export interface TrainProfilerContext {
  saveDir: string;
  device: Device;
  meta: Record<string, unknown>;
  warmup: number;
  steps: number;
  /** `profile_trace`: record ORT's trace (profile.json needs it). */
  trace: boolean;
  log: (line: string) => void;
}

export type TrainProfilerFactory = (ctx: TrainProfilerContext) => Promise<TrainProfiler>;
