/** `libreyolo val` end to end: a real process on a generated dataset, text and --json. */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { generateSynthDataset } from '../src/data/synth.ts';
import { fixture } from './helpers/fixtures.ts';
import { runCli } from './helpers/cli.ts';

describe('libreyolo val', () => {
  const dir = mkdtempSync(join(tmpdir(), 'libreyolo-val-'));
  let yaml = '';
  before(async () => {
    yaml = (await generateSynthDataset({ out: join(dir, 'shapes'), seed: 3, train: 2, val: 3, imgsz: 96 })).yaml;
  });

  it('prints the metrics as JSON with the original key names', async () => {
    const r = await runCli(['val', `model=${fixture('yolo9t_ref.pt')}`, `data=${yaml}`, 'imgsz=96', 'batch=2', '--json'], dir);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { schema_version: number; images: number; metrics: Record<string, number> };
    assert.equal(out.schema_version, 1);
    assert.equal(out.images, 3);
    for (const key of ['metrics/precision', 'metrics/recall', 'metrics/mAP50', 'metrics/mAP50-95']) {
      assert.equal(typeof out.metrics[key], 'number', key);
      assert.ok(out.metrics[key]! >= 0 && out.metrics[key]! <= 1, `${key} = ${out.metrics[key]}`);
    }
  });

  it('exits 3 with a clear message for a dataset that does not exist', async () => {
    const r = await runCli(['val', `model=${fixture('yolo9t_ref.pt')}`, 'data=no-such-dataset.yaml'], dir);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /no-such-dataset/);
  });
});
