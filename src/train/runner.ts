/**
 * Runs the train step for batches of any size: `TrainStep` sessions have a static batch, so one is
 * created per batch size seen (normally one; a second only for a dataset smaller than the batch).
 * The step's ORT run is bracketed as the `forward` phase for a profiler; its gradient nodes carry
 * `/backward/` names, so kernels are attributed to `backward` from the ORT profile.
 */
import type { DetectionNetwork, ModelFamily } from '../models/registry.ts';
import { TrainStep, type TrainStepOptions } from './step.ts';
import type { StepResult } from './types.ts';
import type { TrainBatch } from '../data/train-batch.ts';

export type PhaseFn = <T>(name: 'to_device' | 'forward' | 'backward' | 'optimizer', fn: () => Promise<T>) => Promise<T>;

/** A step's options for every batch size; `profileFilePrefix` gets `_b<batch>` per session. */
export type StepRunnerOptions = Omit<TrainStepOptions, 'batch'>;

export interface StepRunner {
  /** Creates the session for this batch size now (it takes a while), so the first step is a plain step. */
  prepare(batch: number): Promise<void>;
  /** `switches`: the family's loss switches for this step (YOLOX `use_l1`). */
  run(batch: TrainBatch, phase?: PhaseFn, switches?: Readonly<Record<string, boolean>>): Promise<StepResult>;
  /** The underlying steps, by batch size (for profiling hooks). */
  readonly steps: ReadonlyMap<number, TrainStep>;
  /** Train steps opened so far, closed ones included: each is one train session serving all its sizes. */
  readonly opened: number;
  close(): Promise<void>;
}

const direct: PhaseFn = (_name, fn) => fn();

export async function openStepRunner(family: ModelFamily, network: DetectionNetwork, options: StepRunnerOptions): Promise<StepRunner> {
  const steps = new Map<number, Promise<TrainStep>>();
  const ready = new Map<number, TrainStep>();
  let opened = 0;
  const get = (batch: number): Promise<TrainStep> => {
    let s = steps.get(batch);
    if (!s) {
      opened++;
      const { profileFilePrefix, ...rest } = options;
      s = TrainStep.create(family, network, { ...rest, batch, ...(profileFilePrefix ? { profileFilePrefix: `${profileFilePrefix}_b${batch}` } : {}) }).then((st) => {
        ready.set(batch, st);
        return st;
      });
      steps.set(batch, s);
    }
    return s;
  };
  return {
    steps: ready,
    get opened() {
      return opened;
    },
    async prepare(batch) {
      await get(batch);
    },
    async run(batch, phase = direct, switches = {}) {
      const step = await get(batch.images.dims[0]!);
      return phase('forward', () => step.run(batch, switches));
    },
    async close() {
      const all = [...steps.values()];
      steps.clear();
      ready.clear();
      for (const s of all) {
        try {
          await (await s).close();
        } catch {
          // a step that failed to start has nothing to release
        }
      }
    },
  };
}
