/**
 * Exponential moving average of the model state: a copy of every state_dict entry;
 * per update `u += 1`, `d = decay * (1 - exp(-u / tau))` and every floating entry (weights and
 * BatchNorm running stats) becomes `d * ema + (1 - d) * model`, rounded to float32 per op as torch's
 * in-place ops do. Integer buffers (`num_batches_tracked`) keep the value they had when copied.
 * Validation and the saved `model` weights use this copy.
 */
import type { Parameter } from '../graph/module.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { emaUpdate } from './update-kernels.ts';

export const EMA_DECAY = 0.9999;
export const EMA_TAU = 2000;

const f = Math.fround;

function copyTensor(t: HostTensor): HostTensor {
  return { dtype: t.dtype, dims: [...t.dims], data: t.data.slice() };
}

export class ModelEMA {
  /** The averaged state, by state_dict key, in state_dict order. */
  readonly state: Map<string, HostTensor>;
  updates: number;

  /** A constant decay replacing the ramp (setConstantDecay), else null. */
  private constant: number | null = null;

  constructor(source: Iterable<[string, Parameter]>, readonly decay = EMA_DECAY, readonly tau = EMA_TAU, updates = 0) {
    this.state = new Map();
    for (const [k, p] of source) this.state.set(k, copyTensor(p.value));
    this.updates = updates;
  }

  /** The decay used by update number `u` (1-based). */
  decayAt(u: number): number {
    return this.constant ?? this.decay * (1 - Math.exp(-u / this.tau));
  }

  /**
   * Every later update uses `decay` as is, without the ramp (the original's set_decay(d, ramp=False),
   * D-FINE's EMA restart); the averaged state and the update count carry on.
   */
  setConstantDecay(decay: number): void {
    this.constant = decay;
  }

  update(source: Iterable<[string, Parameter]>): void {
    this.updates += 1;
    const d = this.decayAt(this.updates);
    const dF = f(d);
    const oneMinus = f(1 - d);
    for (const [k, p] of source) {
      const e = this.state.get(k);
      if (!e || !(e.data instanceof Float32Array) || !(p.value.data instanceof Float32Array)) continue;
      emaUpdate(e.data, p.value.data, dF, oneMinus);
    }
  }

  /** Replaces the averaged state (resume): entries with a matching key and size are copied in. */
  load(state: Map<string, HostTensor>, updates: number): void {
    for (const [k, t] of state) {
      const e = this.state.get(k);
      if (e && e.data.length === t.data.length && e.dtype === t.dtype) e.data.set(t.data as never);
    }
    this.updates = updates;
  }
}
