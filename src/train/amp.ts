/**
 * Mixed-precision training (amp) for GPU providers, after PyTorch's autocast + GradScaler: the
 * network's convolutions, element-wise ops and their gradients run in float16; BatchNorm statistics,
 * the loss and its gradient, and the parameters and their gradients at the session boundary stay
 * float32. The loss is multiplied by a dynamic scale before the backward pass so small float16
 * gradients do not flush to zero; the host divides it out and skips the update when a gradient
 * overflowed.
 */
import type { Graph, Node } from '../graph/ir.ts';
import { convertPrecision, type PrecisionSummary } from '../graph/passes/precision.ts';

/** Nodes that keep float32: the loss and its gradient, and BatchNorm (statistics and their gradient). */
function keepsFloat32(node: Node): boolean {
  return /^\/(backward\/)?loss\//.test(node.name) || node.name.includes('/bn/');
}

/** Rewrites a lowered training graph to compute the network in float16 (inputs and outputs stay float32). */
export function autocastTrainGraph(graph: Graph): PrecisionSummary {
  return convertPrecision(graph, { dtype: 'float16', keepIO: true, region: (n) => !keepsFloat32(n) });
}

export interface LossScalerOptions {
  /** Initial scale (PyTorch: 2^16). */
  initScale?: number;
  growthFactor?: number;
  backoffFactor?: number;
  /** Consecutive finite steps before the scale grows (PyTorch: 2000). */
  growthInterval?: number;
}

/** Dynamic loss scaling, as torch.cuda.amp.GradScaler. */
export class LossScaler {
  scale: number;
  private goodSteps = 0;
  private readonly growth: number;
  private readonly backoff: number;
  private readonly interval: number;

  constructor(o: LossScalerOptions = {}) {
    this.scale = o.initScale ?? 65536;
    this.growth = o.growthFactor ?? 2;
    this.backoff = o.backoffFactor ?? 0.5;
    this.interval = o.growthInterval ?? 2000;
  }

  /**
   * Divides the gradients by the scale in place and updates the scale. Returns false (the caller
   * skips the optimizer step) when any gradient is not finite.
   */
  unscale(gradients: Iterable<Float32Array>): boolean {
    const inv = 1 / this.scale;
    const all = [...gradients];
    for (const g of all) {
      for (let k = 0; k < g.length; k++) {
        if (!Number.isFinite(g[k]!)) {
          this.scale *= this.backoff;
          this.goodSteps = 0;
          return false;
        }
      }
    }
    for (const g of all) for (let k = 0; k < g.length; k++) g[k] = g[k]! * inv;
    if (++this.goodSteps >= this.interval) {
      this.scale *= this.growth;
      this.goodSteps = 0;
    }
    return true;
  }
}
