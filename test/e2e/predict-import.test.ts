/**
 * A predict-only program stays small: importing the package (src/index.ts) in a fresh process loads
 * the predict path, not the trainer, the exporter or the training profiler (model.ts and index.ts
 * load those on first use).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadedSrcModules } from '../helpers/loaded-modules.ts';

describe('predict-only import', () => {
  it('loads no trainer, exporter or training profiler', () => {
    const loaded = loadedSrcModules('src/index.ts');
    assert.ok(loaded.includes('model.ts') && loaded.includes('predict/predictor.ts'), `the module log missed the predict path: ${loaded.join(' ')}`);
    const heavy = loaded.filter((f) => f === 'train/trainer.ts' || f === 'train/step.ts' || f === 'train/check.ts' ||
      f === 'export/onnx-export.ts' || f === 'profile/train-profiler.ts' || f.startsWith('app/'));
    assert.deepEqual(heavy, [], `${loaded.length} src modules loaded`);
  });
});
