/** `model.train()`: trains, then the model itself carries the trained weights (as the original's wrapper). */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { generateSynthDataset } from '../src/data/synth.ts';
import { createFreshModel } from '../src/train/trainer.ts';
import { loadCheckpointFile } from '../src/weights/checkpoint.ts';

describe('model.train()', () => {
  it('writes last.pt and loads the trained weights back into the model', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-model-train-'));
    const { yaml } = await generateSynthDataset({ out: join(tmp, 'd'), seed: 2, train: 4, val: 2, imgsz: 64, classes: ['circle'], square: true });
    const model = createFreshModel('t', { nc: 1 });
    const before = Float32Array.from([...model.network!.namedTensors()].find(([k]) => k === 'backbone.conv0.conv.weight')![1].value.data as Float32Array);
    try {
      const r = await model.train({ data: yaml, epochs: 2, batch: 2, imgsz: 64, workers: 0, seed: 0, project: join(tmp, 'runs'), name: 'm', verbose: false });
      const ckpt = r.best_checkpoint ?? r.last_checkpoint;
      assert.ok(ckpt, 'a checkpoint was written');
      const after = [...model.network!.namedTensors()].find(([k]) => k === 'backbone.conv0.conv.weight')![1].value.data as Float32Array;
      const saved = (await loadCheckpointFile(ckpt)).stateDict.get('backbone.conv0.conv.weight')!.data as Float32Array;
      assert.notDeepEqual(Array.from(after), Array.from(before), 'weights changed');
      assert.deepEqual(Array.from(after), Array.from(saved), 'the model carries the checkpoint weights');
      assert.equal(model.names[0], 'circle');
      const res = await model.predict(join(tmp, 'd', 'images', 'val'), { conf: 0.01 });
      assert.ok(Array.isArray(res) && res.length === 2);
    } finally {
      await model.close();
    }
  });
});
