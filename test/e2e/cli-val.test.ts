/** `libreyolo val` end to end: a real process on a generated dataset, text and --json. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { DEFAULT_MODEL_PATH } from '../../src/assets.ts';
import { DEMO_CLASSES } from '../../src/data/demo-scenes.ts';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { LibreYOLO } from '../../src/load.ts';
import { validate } from '../../src/val/validate.ts';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/temp.ts';

describe('libreyolo val', () => {
  const dir = tempDir();
  let yaml = '';
  before(async () => {
    // The bundled model's own distribution (docs/default-model.md), so the metrics mean something.
    yaml = (await generateSynthDataset({
      out: join(dir, 'shapes'), seed: 3, train: 1, val: 4, imgsz: 160, classes: [...DEMO_CLASSES], minObjects: 2, maxObjects: 7, sizeRange: [0.15, 0.45],
    })).yaml;
  });

  it('prints the metrics as JSON with the original key names, equal to validate() on the same data', async () => {
    const r = await runCli(['val', `model=${DEFAULT_MODEL_PATH}`, `data=${yaml}`, 'batch=2', '--json'], dir);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { schema_version: number; images: number; metrics: Record<string, number> };
    assert.equal(out.schema_version, 1);
    assert.equal(out.images, 4);
    // The CLI defaults are conf 0.001 and iou 0.6, as the library's.
    const model = await LibreYOLO(DEFAULT_MODEL_PATH, { progress: false });
    let want: Record<string, number>;
    try {
      want = (await validate(model, yaml, { batch: 2, conf: 0.001, iou: 0.6 })).metrics;
    } finally {
      await model.close();
    }
    for (const key of ['metrics/precision', 'metrics/recall', 'metrics/mAP50', 'metrics/mAP50-95', 'metrics/mAP75', 'metrics/AR100']) {
      assert.equal(typeof out.metrics[key], 'number', key);
      assert.equal(out.metrics[key], want[key], `${key}: CLI ${out.metrics[key]}, validate() ${want[key]}`);
    }
    assert.ok(out.metrics['metrics/mAP50']! > 0.9, `the bundled model on its shapes: mAP50 ${out.metrics['metrics/mAP50']}`);
  });

  it('exits 2 for a bad split before the dataset is looked up or downloaded', async () => {
    // A dataset that does not exist: were it looked up first, this would exit 3 naming it.
    const r = await runCli(['val', `model=${DEFAULT_MODEL_PATH}`, 'data=no-such-dataset.yaml', 'split=bogus'], dir);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr, 'Error: split must be train, val or test, got "bogus"\n');
  });

  it('exits 3 with a clear message for a dataset that does not exist', async () => {
    const r = await runCli(['val', `model=${DEFAULT_MODEL_PATH}`, 'data=no-such-dataset.yaml'], dir);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /no-such-dataset/);
  });
});
