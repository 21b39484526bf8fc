/** When images may share a forward, and whether one chunk's inputs can be stacked. */
import type { FamilyCapabilities, PreprocessPlan } from '../models/registry.ts';

/**
 * The original's rule: stack only with batch > 1, no tiling, no active TTA, a family that allows it
 * and a network that is not in train mode (BatchNorm would mix the images' statistics).
 */
export function useStackedPath(
  opts: { batch: number; tiling: boolean; augment: boolean },
  caps: FamilyCapabilities,
  training: boolean,
): boolean {
  return opts.batch > 1 && !opts.tiling && !(opts.augment && caps.TTA_ENABLED) && caps.SUPPORTS_BATCHED_PREDICT && !training;
}

/** Every plan is `[1, ...]` with the same shape and dtype as the first: then they can be concatenated. */
export function stackable(plans: readonly PreprocessPlan[]): boolean {
  const first = plans[0];
  if (!first || first.dims[0] !== 1) return false;
  const shape = first.dims.join('x');
  return plans.every((p) => p.dims.length === first.dims.length && p.dims[0] === 1 && p.dims.join('x') === shape && p.dtype === first.dtype);
}

export function chunked<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let k = 0; k < items.length; k += size) out.push(items.slice(k, k + size));
  return out;
}
