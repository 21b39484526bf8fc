/**
 * RF-DETR's multi-scale training: the square sizes a step may train at, and the one each optimizer
 * step takes. The sizes are (S / d + o) x d for o in -5..5 (expanded scales; -3..4 otherwise), d =
 * patch x windows (32 for detection), those below 2d dropped: n trains at 224..544. Step k trains at
 * Python's `random.Random(k).choice(sizes)`, so every micro-batch of one optimizer step shares its
 * size and a run repeats the original's sequence. The loader's canvas is the largest size.
 */
import { PyRandom } from '../../util/py-random.ts';

const EXPANDED = [-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5];
const NARROW = [-3, -2, -1, 0, 1, 2, 3, 4];

/** The multi-scale sizes around `resolution` for input divisor `divisor`, ascending. */
export function rfdetrMultiScaleSizes(resolution: number, divisor: number, expanded = true): number[] {
  const base = Math.trunc(resolution / divisor);
  return (expanded ? EXPANDED : NARROW).map((o) => (base + o) * divisor).filter((s) => s >= divisor * 2);
}

/** The square size optimizer step `step` (0-based, counted over the run) trains at. */
export function rfdetrStepSize(step: number, sizes: readonly number[]): number {
  return new PyRandom(step).choice(sizes);
}
