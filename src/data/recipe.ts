/**
 * Train augmentation recipes as data. A family declares its pipeline (`TrainingHooks.augment`) as a
 * list of named steps with their parameters and schedules; the step table below resolves the list,
 * against the run's train options, into what the loader runs (`AugmentHyp`) and, per epoch, which
 * scheduled steps are on.
 *
 * A numeric parameter is a number, or the name of the train option that holds it (`prob:
 * 'mosaic_prob'`), so the run's value (the family's default or the user's) reaches the step. The
 * loader runs the steps in the table's order; a recipe lists them in that order, each at most once,
 * and a step it leaves out does not run. The steps (their code: augment.ts, affine.ts, mixup.ts,
 * strong-augment.ts, hsv.ts):
 *
 *   mosaic         4-image mosaic with probability `prob`, in the epochs of `schedule`; the 2s x 2s
 *                  canvas is halved onto the input unless random_affine runs
 *   random_affine  the mosaic canvas through the random affine (`degrees`, `translate`, `scale`,
 *                  `shear`) onto the input; with `ifAny`, only when one of those parameters is > 0
 *   mixup          after a mosaic that has labels, with probability `prob` and jitter range `scale`
 *   pre_flip       horizontal flip with probability `prob` of a non-mosaic sample, before the crops
 *   crop_resize    with probability `prob`, on a non-mosaic sample with boxes: shortest side to one of
 *                  `scales`, then a random square crop of side in [min(minCrop, m), m], m = min(maxSize, h, w)
 *   strong         photometric distort, zoom-out and IoU crop on non-mosaic samples with boxes, in the
 *                  epochs of `schedule`
 *   hsv            HSV jitter with probability `prob`, maximum gains `gains` (default 5, 30, 30)
 *   flip           horizontal flip with probability `prob`
 *   stretch_linear the final stretch is OpenCV's INTER_LINEAR (no antialias), boxes with a side <= 1 px
 *                  after it dropped (RF-DETR; needs a family whose input is a stretch)
 *
 * The last step, letterbox or stretch onto the input, follows the family's input spec.
 */

import { LibreYOLOError } from '../errors.ts';
import type { AugmentHyp } from './augment.ts';
import { HSV_GAINS } from './hsv.ts';

/** A number, or the name of the (numeric) train option whose value the run takes. */
export type Num = number | string;
/** A `[min, max]` range, or the name of the train option that holds it. */
export type NumPair = readonly [number, number] | string;

/** The epochs a scheduled step runs in (all of them when both are absent). */
export interface StepSchedule {
  /** Off in the last N epochs: `offLast: 'no_aug_epochs'` is close-mosaic. */
  offLast?: Num;
  /** Off from epoch int(epochs x ratio) on (D-FINE's stop epoch, `aug_stop_epoch_ratio`). */
  stopRatio?: Num;
}

export type AugmentStep =
  | { readonly step: 'mosaic'; readonly prob: Num; readonly schedule?: StepSchedule }
  | {
    readonly step: 'random_affine'; readonly degrees: Num; readonly translate: Num; readonly scale: NumPair; readonly shear: Num;
    readonly ifAny?: readonly ('degrees' | 'translate' | 'shear')[];
  }
  | { readonly step: 'mixup'; readonly prob: Num; readonly scale: NumPair }
  | { readonly step: 'pre_flip'; readonly prob: Num }
  | { readonly step: 'crop_resize'; readonly prob: Num; readonly scales: readonly number[]; readonly maxSize: Num; readonly minCrop: Num }
  | { readonly step: 'strong'; readonly schedule?: StepSchedule }
  | { readonly step: 'hsv'; readonly prob: Num; readonly gains?: readonly [number, number, number] }
  | { readonly step: 'flip'; readonly prob: Num }
  | { readonly step: 'stretch_linear' };

export type AugmentStepName = AugmentStep['step'];
export type AugmentRecipe = readonly AugmentStep[];

/** A recipe resolved for one run. */
export interface ResolvedRecipe {
  /** The loader's hyper-parameters (every augmentation field set; `resize` is the caller's). */
  readonly hyp: Omit<AugmentHyp, 'resize'>;
  /** Whether the scheduled steps run in `epoch` (0-based) of `epochs`. */
  epoch(epoch: number, epochs: number): { mosaic: boolean; strong: boolean };
}

/** The steps bound to the core's train options, as recipes usually take them. */
export const STANDARD_STEPS = {
  mosaic: { step: 'mosaic', prob: 'mosaic_prob', schedule: { offLast: 'no_aug_epochs' } },
  randomAffine: { step: 'random_affine', degrees: 'degrees', translate: 'translate', scale: 'mosaic_scale', shear: 'shear' },
  /** The random affine only when `degrees` or `shear` ask for it (the mosaic is halved otherwise). */
  randomAffineIfAsked: {
    step: 'random_affine', degrees: 'degrees', translate: 'translate', scale: 'mosaic_scale', shear: 'shear', ifAny: ['degrees', 'shear'],
  },
  mixup: { step: 'mixup', prob: 'mixup_prob', scale: 'mixup_scale' },
  hsv: { step: 'hsv', prob: 'hsv_prob' },
  flip: { step: 'flip', prob: 'flip_prob' },
} as const satisfies Record<string, AugmentStep>;

/**
 * The core's recipe, for families that declare none: mosaic (halved, or through the random affine
 * when `degrees` or `shear` ask for it) until the last `no_aug_epochs`, mixup, HSV, flip.
 */
export const BASE_RECIPE: AugmentRecipe = [
  STANDARD_STEPS.mosaic, STANDARD_STEPS.randomAffineIfAsked, STANDARD_STEPS.mixup, STANDARD_STEPS.hsv, STANDARD_STEPS.flip,
];

/** Train options that only feed augmentation steps: an option no step of a run's recipe names does nothing in it. */
export const AUGMENT_OPTIONS = [
  'mosaic_prob', 'degrees', 'translate', 'mosaic_scale', 'shear', 'mixup_prob', 'mixup_scale', 'crop_resize_prob', 'hsv_prob', 'flip_prob',
] as const;

/** The train options a recipe's steps name (parameters and schedules). */
export function recipeOptions(recipe: AugmentRecipe): Set<string> {
  const names = new Set<string>();
  const visit = (v: unknown): void => {
    if (typeof v === 'string') names.add(v);
    else if (v && typeof v === 'object' && !Array.isArray(v)) Object.values(v).forEach(visit);
  };
  for (const { step: _step, ...params } of recipe) visit(params);
  return names;
}

/**
 * The augmentation options set away from their defaults that no step of `recipe` reads: accepted,
 * they would be ignored, so a run refuses them. `value` is the run's, `fallback` the default it would have had.
 */
export function ignoredAugmentOptions(recipe: AugmentRecipe, value: (name: string) => unknown, fallback: (name: string) => unknown): string[] {
  const used = recipeOptions(recipe);
  return AUGMENT_OPTIONS.filter((n) => !used.has(n) && JSON.stringify(value(n)) !== JSON.stringify(fallback(n)));
}

type Hyp = { -readonly [K in keyof ResolvedRecipe['hyp']]: ResolvedRecipe['hyp'][K] };

interface Resolver {
  num(value: Num, param: string): number;
  pair(value: NumPair, param: string): readonly [number, number];
  /** `train: <option> must be ...`, naming the option (or the step's parameter when literal). */
  rangeError(value: Num | NumPair, param: string, what: string, got: unknown): LibreYOLOError;
}

interface StepDef<S extends AugmentStep> {
  /** Applies the step's resolved parameters to the loader's hyper-parameters. */
  apply(step: S, r: Resolver, hyp: Hyp): void;
}

const checkRange = (r: Resolver, value: NumPair, param: string): readonly [number, number] => {
  const p = r.pair(value, param);
  if (!(p[0] > 0 && p[0] <= p[1])) throw r.rangeError(value, param, '[min, max] with 0 < min <= max', p);
  return p;
};

/** The step table, in the order the loader runs the steps. */
const STEP_TABLE: { readonly [N in AugmentStepName]: StepDef<Extract<AugmentStep, { step: N }>> } = {
  mosaic: { apply: (s, r, hyp) => { hyp.mosaicProb = r.num(s.prob, 'prob'); } },
  random_affine: {
    apply(s, r, hyp) {
      const degrees = r.num(s.degrees, 'degrees'), translate = r.num(s.translate, 'translate'), shear = r.num(s.shear, 'shear');
      const values = { degrees, translate, shear };
      if (s.ifAny && !s.ifAny.some((k) => values[k] > 0)) return;
      hyp.affine = { degrees, translate, scale: checkRange(r, s.scale, 'scale'), shear };
    },
  },
  mixup: {
    apply(s, r, hyp) {
      hyp.mixupProb = r.num(s.prob, 'prob');
      hyp.mixupScale = hyp.mixupProb > 0 ? checkRange(r, s.scale, 'scale') : r.pair(s.scale, 'scale');
    },
  },
  pre_flip: { apply: (s, r, hyp) => { hyp.preFlipProb = r.num(s.prob, 'prob'); } },
  crop_resize: {
    apply(s, r, hyp) {
      const maxSize = r.num(s.maxSize, 'maxSize'), minCrop = r.num(s.minCrop, 'minCrop');
      const whole = (v: number): boolean => Number.isInteger(v) && v >= 1;
      if (s.scales.length === 0 || !s.scales.every(whole) || !whole(maxSize) || !whole(minCrop)) {
        throw new TypeError(`augmentation recipe: crop_resize needs positive integer scales, maxSize and minCrop (${JSON.stringify({ scales: s.scales, maxSize, minCrop })})`);
      }
      hyp.cropResize = { prob: r.num(s.prob, 'prob'), scales: s.scales, maxSize, minCrop };
    },
  },
  strong: { apply: () => undefined },
  hsv: { apply: (s, r, hyp) => { hyp.hsvProb = r.num(s.prob, 'prob'); hyp.hsvGains = s.gains ?? HSV_GAINS; } },
  flip: { apply: (s, r, hyp) => { hyp.flipProb = r.num(s.prob, 'prob'); } },
  stretch_linear: { apply: (_s, _r, hyp) => { hyp.stretchLinear = true; } },
};

const STEP_ORDER = Object.keys(STEP_TABLE) as AugmentStepName[];

/**
 * Whether epoch `epoch` (0-based) of `epochs` is in `schedule` (every epoch when absent), its
 * parameters bound through `option`; `what` names the schedule's owner in errors.
 */
export function scheduledEpochs(schedule: StepSchedule | undefined, option: (name: string) => unknown, what: string): (epoch: number, epochs: number) => boolean {
  const num = (v: Num, param: string): number => {
    const x = typeof v === 'string' ? option(v) : v;
    if (typeof x !== 'number' || !Number.isFinite(x)) throw new TypeError(`${what}.schedule.${param} is not a finite number (${JSON.stringify(x)})`);
    return x;
  };
  const offLast = schedule?.offLast === undefined ? 0 : num(schedule.offLast, 'offLast');
  const stopRatio = schedule?.stopRatio === undefined ? null : num(schedule.stopRatio, 'stopRatio');
  return (epoch, epochs) => epoch < epochs - offLast && (stopRatio === null || epoch < Math.trunc(epochs * stopRatio));
}

/**
 * Resolves `recipe` against the run's train options (`option(name)` gives an option's value).
 * Throws `config_range_error` for a range the run sets wrong (`mosaic_scale` of an active affine,
 * `mixup_scale` with mixup on), and a TypeError for a recipe that is itself wrong (a step out of
 * the table's order or twice, a parameter naming an option that is not numeric).
 */
export function resolveRecipe(recipe: AugmentRecipe, option: (name: string) => unknown): ResolvedRecipe {
  let last = -1;
  for (const s of recipe) {
    const at = STEP_ORDER.indexOf(s.step);
    if (at < 0) throw new TypeError(`augmentation recipe: unknown step '${String(s.step)}' (steps: ${STEP_ORDER.join(', ')})`);
    if (at <= last) throw new TypeError(`augmentation recipe: step '${s.step}' is out of order or listed twice (order: ${STEP_ORDER.join(', ')})`);
    last = at;
  }
  const hyp: Hyp = { hsvProb: 0, hsvGains: HSV_GAINS, flipProb: 0, mosaicProb: 0, scale: 0, translate: 0, affine: null, mixupProb: 0, mixupScale: [0.5, 1.5], preFlipProb: 0, cropResize: null };
  for (const s of recipe) {
    const bound = (value: Num | NumPair, param: string): unknown => {
      if (typeof value !== 'string') return value;
      const v = option(value);
      if (v === undefined) throw new TypeError(`augmentation recipe: ${s.step}.${param} names the train option '${value}', which does not exist`);
      return v;
    };
    const r: Resolver = {
      num(value, param) {
        const v = bound(value, param);
        if (typeof v !== 'number' || !Number.isFinite(v)) throw new TypeError(`augmentation recipe: ${s.step}.${param} is not a finite number (${JSON.stringify(v)})`);
        return v;
      },
      pair(value, param) {
        const v = bound(value, param);
        if (!Array.isArray(v) || v.length !== 2 || !v.every((x) => typeof x === 'number')) {
          throw new TypeError(`augmentation recipe: ${s.step}.${param} is not a [min, max] pair (${JSON.stringify(v)})`);
        }
        return v as unknown as readonly [number, number];
      },
      rangeError: (value, param, what, got) => new LibreYOLOError('config_range_error',
        `train: ${typeof value === 'string' ? value : `${s.step}.${param}`} must be ${what}, got ${JSON.stringify(got)}`),
    };
    (STEP_TABLE[s.step].apply as (step: AugmentStep, r: Resolver, hyp: Hyp) => void)(s, r, hyp);
  }
  const scheduleOf = (name: 'mosaic' | 'strong'): ((epoch: number, epochs: number) => boolean) => {
    const s = recipe.find((x) => x.step === name) as { schedule?: StepSchedule } | undefined;
    return s ? scheduledEpochs(s.schedule, option, `augmentation recipe: ${name}`) : () => false;
  };
  const mosaicOn = scheduleOf('mosaic'), strongOn = scheduleOf('strong');
  return { hyp, epoch: (epoch, epochs) => ({ mosaic: mosaicOn(epoch, epochs), strong: strongOn(epoch, epochs) }) };
}
