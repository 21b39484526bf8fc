/**
 * `patience`: training stops after that many consecutive validations without a strictly better
 * mAP50-95 (the original counts validations, not epochs); `patience=0` never stops early. The runs
 * use lr0 1e-30 and no warmup, so no update survives float32 rounding and no validation can improve on the first:
 * the stop epoch is then known exactly.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { createFreshModel } from '../../src/load.ts';
import { trainModel } from '../../src/train/trainer.ts';

describe('patience (early stopping)', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-patience-'));
  let yaml = '';
  before(async () => {
    yaml = (await generateSynthDataset({
      out: join(tmp, 'data'), seed: 3, train: 4, val: 2, imgsz: 64, classes: ['circle'], minObjects: 1, maxObjects: 1, sizeRange: [0.4, 0.6], square: true,
    })).yaml;
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  const run = async (name: string, patience: number): Promise<{ epochs: number; metrics: number[]; log: string }> => {
    let log = '';
    const stream = { write: (s: string) => { log += s; return true; }, isTTY: false } as unknown as NodeJS.WriteStream;
    const results = await trainModel(createFreshModel('yolo9t'), {
      data: yaml, epochs: 6, batch: 4, imgsz: 64, workers: 1, lr0: 1e-30, warmup_epochs: 0, momentum: 0, weight_decay: 0, ema: false,
      no_aug_epochs: 6, eval_interval: 1, patience, project: join(tmp, 'runs'), name, verbose: true, threads: 1,
    }, { warn: () => undefined, stream });
    const csv = readFileSync(join(results.save_dir as string, 'results.csv'), 'utf8').trim().split('\n');
    const col = csv[0]!.split(',').indexOf('current_metric');
    return { epochs: csv.length - 1, metrics: csv.slice(1).map((l) => Number(l.split(',')[col])), log };
  };

  it('stops after `patience` validations without improvement, with the original\'s message', async () => {
    const r = await run('p2', 2);
    assert.equal(new Set(r.metrics).size, 1, `lr0=0: every validation gives the same mAP50-95 (${r.metrics.join(', ')})`);
    assert.equal(r.epochs, 3, 'epoch 1 is the first best; epochs 2 and 3 do not improve; patience 2 stops there');
    assert.match(r.log, /Early stopping triggered after 3 epochs \(patience=2, no improvement for 2 validations; best mAP50-95 [\d.]+ at epoch 1\)/);
  });

  it('patience=0 trains every epoch', async () => {
    const r = await run('p0', 0);
    assert.equal(r.epochs, 6);
    assert.doesNotMatch(r.log, /Early stopping/);
  });
});
