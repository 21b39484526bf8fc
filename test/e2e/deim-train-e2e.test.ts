/**
 * `libreyolo train model=<a DEIM checkpoint>` end to end on a tiny synthetic dataset (2 train and 1
 * val images of 1-2 circles, 640 px): the run resolves DEIMConfig's defaults, rebuilds the heads for
 * the dataset's one class, takes a step at imgsz=320 (DEIM's transform honours imgsz, as the
 * original's) with MAL as its class term (results.csv logs train/mal_loss, no vfl), validates at
 * 640 (its eval graph's only size; before, the validation refused 320 and the run died after its
 * first epoch), and writes checkpoints that LibreYOLO() loads back as DEIM n with one class. One
 * step, so it shows the wiring, not learning (test/e2e/deim-train-learn.test.ts shows that).
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { LibreYOLO } from '../../src/index.ts';
import { runCli } from '../helpers/cli.ts';
import { fixture } from '../helpers/fixtures.ts';

describe('DEIM training end to end', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-deim-e2e-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('libreyolo train model=LibreDEIMn.pt imgsz=320: one MAL step on 1 class, validation at 640, checkpoints reloaded as DEIM', async () => {
    const synth = await generateSynthDataset({
      out: join(tmp, 'circles'), seed: 1, train: 2, val: 1, imgsz: 640, classes: ['circle'], minObjects: 1, maxObjects: 2, sizeRange: [0.3, 0.6],
    });
    const weights = join(tmp, 'LibreDEIMn.pt');
    copyFileSync(fixture('deimn_ref.pt'), weights);
    const train = await runCli(['train', `model=${weights}`, `data=${synth.yaml}`, 'epochs=1', 'batch=2', 'imgsz=320', 'workers=0', 'threads=2',
      'eval_interval=1', `project=${join(tmp, 'runs')}`, 'name=deim', 'verbose=false'], tmp);
    assert.equal(train.code, 0, train.stderr);
    assert.match(train.stdout, /Results saved to .*runs[/\\]deim/);
    const header = readFileSync(join(tmp, 'runs', 'deim', 'results.csv'), 'utf8').split('\n')[0]!.split(',');
    assert.ok(header.includes('train/mal_loss') && !header.includes('train/vfl_loss'), header.join(','));
    const row = readFileSync(join(tmp, 'runs', 'deim', 'results.csv'), 'utf8').trim().split('\n')[1]!.split(',');
    const mal = Number(row[header.indexOf('train/mal_loss')]);
    assert.ok(Number.isFinite(mal) && mal > 0, `train/mal_loss ${mal}`);
    assert.ok(Number.isFinite(Number(row[header.indexOf('metrics/mAP50-95')])), `validated: ${row.join(',')}`);
    const last = join(tmp, 'runs', 'deim', 'weights', 'last.pt');
    assert.ok(existsSync(last));
    const m = await LibreYOLO(last, { progress: false, threads: 1 });
    try {
      assert.deepEqual([m.family.name, m.size, m.nc, m.names[0]], ['deim', 'n', 1, 'circle']);
    } finally {
      await m.close();
    }
  });
});
