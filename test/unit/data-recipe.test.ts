/**
 * Augmentation recipes as data (src/data/recipe.ts): each trainable family's declared steps resolve,
 * against its own training defaults and the user's options, to the loader's hyper-parameters and
 * per-epoch switches; the run's option values reach the steps; a recipe out of the table's order, a
 * step twice or a parameter naming no numeric option is refused; a wrong range of an active step is
 * a config_range_error naming the option.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LibreYOLOError } from '../../src/errors.ts';
import { AUGMENT_OPTIONS, BASE_RECIPE, ignoredAugmentOptions, recipeOptions, resolveRecipe, STANDARD_STEPS, type AugmentRecipe } from '../../src/data/recipe.ts';
import { trainingHooks, type ModelFamily } from '../../src/models/registry.ts';
import { dfineFamily } from '../../src/models/dfine/family.ts';
import { rfdetrFamily } from '../../src/models/rfdetr/family.ts';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import { yoloxFamily } from '../../src/models/yolox/family.ts';
import { resolveTrainConfig } from '../../src/train/config.ts';

/** The family's recipe resolved for a run with `options` over the family's defaults. */
function resolved(family: ModelFamily, options: Record<string, unknown> = {}) {
  const hooks = trainingHooks(family);
  const cfg = resolveTrainConfig({ data: 'x.yaml', ...options }, () => undefined, hooks.defaults) as unknown as Record<string, unknown>;
  return { cfg, recipe: resolveRecipe(hooks.augment ?? BASE_RECIPE, (k) => cfg[k]) };
}

describe('augmentation recipes as data', () => {
  it('every family\'s recipe takes its options: probabilities, the affine and mixup ranges', () => {
    for (const family of [yolo9Family, yoloxFamily, dfineFamily]) {
      const { cfg, recipe: { hyp } } = resolved(family);
      assert.equal(hyp.mosaicProb, cfg.mosaic_prob, family.name);
      assert.equal(hyp.mixupProb, cfg.mixup_prob, family.name);
      assert.deepEqual(hyp.mixupScale, cfg.mixup_scale, family.name);
      assert.equal(hyp.hsvProb, cfg.hsv_prob, family.name);
      assert.deepEqual(hyp.hsvGains, [5, 30, 30], family.name);
      assert.equal(hyp.flipProb, cfg.flip_prob, family.name);
      assert.equal(hyp.scale, 0, family.name);
      assert.equal(hyp.translate, 0, family.name);
    }
  });

  it('YOLOX always follows the mosaic with the random affine; the others only when degrees or shear ask for it', () => {
    assert.deepEqual(resolved(yoloxFamily, { degrees: 0, shear: 0 }).recipe.hyp.affine, { degrees: 0, translate: 0.1, scale: [0.1, 2.0], shear: 0 });
    for (const family of [yolo9Family, dfineFamily]) {
      assert.equal(resolved(family).recipe.hyp.affine, null, family.name);
      assert.deepEqual(resolved(family, { degrees: 5 }).recipe.hyp.affine, { degrees: 5, translate: resolved(family).cfg.translate, scale: [0.5, 1.5], shear: 0 });
      assert.equal(resolved(family, { shear: 1 }).recipe.hyp.affine?.shear, 1, family.name);
      assert.equal(resolved(family, { translate: 0.3 }).recipe.hyp.affine, null, family.name);
    }
  });

  it('mosaic closes for the last no_aug_epochs in every family; only D-FINE has the strong ops', () => {
    for (const family of [yolo9Family, yoloxFamily, dfineFamily]) {
      const { recipe } = resolved(family, { epochs: 10, no_aug_epochs: 3 });
      assert.deepEqual(Array.from({ length: 10 }, (_, e) => recipe.epoch(e, 10).mosaic), [...Array(7).fill(true), ...Array(3).fill(false)], family.name);
      const strong = Array.from({ length: 10 }, (_, e) => recipe.epoch(e, 10).strong);
      // D-FINE: stop epoch int(10 x 0.85) = 8, no-aug from 7.
      assert.deepEqual(strong, family === dfineFamily ? [...Array(7).fill(true), ...Array(3).fill(false)] : Array(10).fill(false), family.name);
    }
    const { recipe } = resolved(dfineFamily, { epochs: 10, no_aug_epochs: 0, aug_stop_epoch_ratio: 0.5 });
    assert.equal(Array.from({ length: 10 }, (_, e) => recipe.epoch(e, 10).strong).indexOf(false), 5);
  });

  it('a step left out does not run, and literal parameters need no option', () => {
    const r = resolveRecipe([{ step: 'flip', prob: 0.25 }], () => undefined);
    assert.deepEqual({ mosaic: r.hyp.mosaicProb, hsv: r.hyp.hsvProb, flip: r.hyp.flipProb, mixup: r.hyp.mixupProb, affine: r.hyp.affine }, { mosaic: 0, hsv: 0, flip: 0.25, mixup: 0, affine: null });
    assert.deepEqual(r.epoch(0, 1), { mosaic: false, strong: false });
  });

  it('refuses a recipe out of order, a step twice, an unknown step or an option that is not numeric', () => {
    const opts = (k: string): unknown => ({ flip_prob: 0.5, hsv_prob: 1, name: 'exp' } as Record<string, unknown>)[k];
    const bad: Array<[AugmentRecipe, RegExp]> = [
      [[STANDARD_STEPS.flip, STANDARD_STEPS.hsv], /'hsv' is out of order or listed twice/],
      [[STANDARD_STEPS.flip, STANDARD_STEPS.flip], /'flip' is out of order or listed twice/],
      [[{ step: 'cutout' } as unknown as AugmentRecipe[number]], /unknown step 'cutout'/],
      [[{ step: 'flip', prob: 'flip_probability' }], /flip\.prob names the train option 'flip_probability', which does not exist/],
      [[{ step: 'flip', prob: 'name' }], /flip\.prob is not a finite number \("exp"\)/],
    ];
    for (const [recipe, message] of bad) assert.throws(() => resolveRecipe(recipe, opts), (e: Error) => e instanceof TypeError && message.test(e.message));
  });

  it('a wrong range of an active step is a config_range_error naming the option; an inactive step does not check it', () => {
    const rangeError = (re: RegExp) => (e: unknown) => e instanceof LibreYOLOError && e.code === 'config_range_error' && re.test(e.message);
    assert.throws(() => resolved(yoloxFamily, { mosaic_scale: [2, 1] }), rangeError(/^train: mosaic_scale must be \[min, max\] with 0 < min <= max, got \[2,1\]$/));
    assert.throws(() => resolved(yolo9Family, { degrees: 1, mosaic_scale: [0, 1] }), rangeError(/mosaic_scale/));
    assert.equal(resolved(yolo9Family, { mosaic_scale: [0, 1] }).recipe.hyp.affine, null);
    assert.throws(() => resolved(yolo9Family, { mixup_prob: 0.5, mixup_scale: [1.5, 0.5] }), rangeError(/^train: mixup_scale must be/));
    assert.deepEqual(resolved(yolo9Family, { mixup_scale: [1.5, 0.5] }).recipe.hyp.mixupScale, [1.5, 0.5]);
    assert.throws(() => resolveRecipe([{ step: 'mixup', prob: 1, scale: [0, 1] }], () => undefined), rangeError(/^train: mixup\.scale must be/));
  });

  it('an augmentation option no step of the family reads is named, unless it keeps its default', () => {
    assert.deepEqual([...recipeOptions(BASE_RECIPE)].sort(), ['degrees', 'flip_prob', 'hsv_prob', 'mixup_prob', 'mixup_scale', 'mosaic_prob', 'mosaic_scale', 'no_aug_epochs', 'shear', 'translate']);
    const rf = trainingHooks(rfdetrFamily).augment!;
    assert.deepEqual([...recipeOptions(rf)].sort(), ['crop_resize_prob', 'flip_prob']);
    const defaults: Record<string, unknown> = { mosaic_prob: 0, hsv_prob: 0, crop_resize_prob: 0 };
    const run = (over: Record<string, unknown>) => (n: string) => (n in over ? over[n] : defaults[n]);
    assert.deepEqual(ignoredAugmentOptions(rf, run({ mosaic_prob: 0.5, hsv_prob: 0, flip_prob: 0.2 }), (n) => defaults[n]), ['mosaic_prob']);
    assert.deepEqual(ignoredAugmentOptions(BASE_RECIPE, run({ crop_resize_prob: 0.5, mosaic_prob: 1 }), (n) => defaults[n]), ['crop_resize_prob']);
    assert.ok(AUGMENT_OPTIONS.every((n) => [...recipeOptions(BASE_RECIPE), ...recipeOptions(rf)].includes(n)), 'every listed option feeds some step');
  });
});
