/**
 * `model.quantize({recipe})`: which recipes exist, which this package can run, and the original's
 * errors and warnings. Only the cast recipes (fp16, bf16) are implemented: they need no calibration,
 * so `calib` is ignored for them, as in the original.
 */
import { LibreYOLOError } from '../errors.ts';
import { listFamilies, type ModelFamily } from '../models/registry.ts';

export const KNOWN_RECIPES = ['fp16', 'bf16', 'fp8', 'int8', 'w4a16', 'w4a8', 'nvfp4', 'mxfp4', 'int2'] as const;

/** The original's calibration algorithms: accepted by `quantize`, unused by the cast recipes (they read no calibration data). */
export const CALIBRATION_ALGORITHMS = ['auto', 'percentile', 'minmax', 'mse', 'entropy'];

export type CastRecipe = 'fp16' | 'bf16';

/** The original's QuantizationError (a ValueError there). */
export class QuantizationError extends LibreYOLOError {
  constructor(message: string) {
    super('quantize_failed', message);
    this.name = 'QuantizationError';
  }
}

export const RECIPE_DTYPE = { fp16: 'float16', bf16: 'bfloat16' } as const;

/** Validates a quantize request in the original's order; returns the cast recipe to apply. */
export function resolveRecipe(recipe: unknown, family: ModelFamily, current: string | null): CastRecipe {
  if (current !== null) {
    throw new QuantizationError(`Model is already quantized (recipe='${current}'). Load a float checkpoint to quantize with a different recipe.`);
  }
  const r = String(recipe ?? '').toLowerCase();
  if (!(KNOWN_RECIPES as readonly string[]).includes(r)) {
    throw new QuantizationError(`Unknown quantization recipe '${String(recipe)}'. Available: ${KNOWN_RECIPES.join(', ')}`);
  }
  if (!family.quantize) {
    const supported = listFamilies().filter((f) => f.quantize).map((f) => f.name);
    throw new QuantizationError(`Quantization is not supported for model family '${family.name}' yet. Supported families: ${supported.join(', ')}`);
  }
  if (r !== 'fp16' && r !== 'bf16') {
    throw new QuantizationError(`Recipe '${r}' needs calibrated low-bit kernels, which this package does not implement yet; available here: fp16, bf16.`);
  }
  return r;
}

export function cpuSlowWarning(recipe: CastRecipe): string {
  return `${recipe} on CPU is functional but slow; use a GPU device.`;
}
