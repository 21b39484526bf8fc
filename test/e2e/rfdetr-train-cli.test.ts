/**
 * `libreyolo train` on an RF-DETR n checkpoint with the family's defaults (multi_scale=true): one
 * optimizer step at the side CPython's random.Random(0).choice draws from n's 11 sides (416), every
 * side served by one train session, and a checkpoint that loads back with the dataset's classes.
 */
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { LibreYOLO } from '../../src/index.ts';
import { runCli } from '../helpers/cli.ts';
import { fixture } from '../helpers/fixtures.ts';
import { tempDir } from '../helpers/temp.ts';

describe('libreyolo train model=<RF-DETR n> with its multi-scale default', () => {
  it('trains the step at its drawn side from one session for all 11 sides and saves a loadable checkpoint', async () => {
    const tmp = tempDir();
    const synth = await generateSynthDataset({ out: join(tmp, 'shapes'), seed: 1, train: 4, val: 1, imgsz: 384, classes: ['circle', 'square', 'triangle'], square: true });
    const weights = join(tmp, 'LibreRFDETRn.pt');
    copyFileSync(fixture('rfdetrn_ref.pt'), weights);
    const run = await runCli(['train', `model=${weights}`, `data=${synth.yaml}`, 'epochs=1', 'batch=2', 'imgsz=384', 'threads=2', `project=${join(tmp, 'runs')}`, 'name=ms'], tmp);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /multi-scale 224\/.*\/544 in one session/);
    const summary = JSON.parse(readFileSync(join(tmp, 'runs', 'ms', 'summary.json'), 'utf8')) as { multi_scale: { sizes: number[]; train_sessions: number; batches_per_size: Record<string, number> }; accumulate: number };
    assert.deepEqual([...summary.multi_scale.sizes].sort((a, b) => a - b), [224, 256, 288, 320, 352, 384, 416, 448, 480, 512, 544]);
    assert.equal(summary.multi_scale.train_sessions, 1);
    // batch 2 of nbs 16: one optimizer step (2 micro-batches of the 4 images), at random.Random(0).choice.
    assert.deepEqual(summary.multi_scale.batches_per_size, { 416: 2 });
    const m = await LibreYOLO(join(tmp, 'runs', 'ms', 'weights', 'last.pt'), { progress: false });
    try {
      assert.deepEqual([m.family.name, m.size, m.nc], ['rfdetr', 'n', 3]);
    } finally {
      await m.close();
    }
  });
});
