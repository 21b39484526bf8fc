/** `model.train()`: trains, then the model itself carries the trained weights (as the original's wrapper). */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { LibreYOLO, type Results } from '../../src/index.ts';
import { createFreshModel } from '../../src/load.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { tempDir } from '../helpers/temp.ts';

describe('model.train()', () => {
  it('writes last.pt and loads the trained weights back into the model', async () => {
    const tmp = tempDir();
    const { yaml } = await generateSynthDataset({ out: join(tmp, 'd'), seed: 2, train: 4, val: 2, imgsz: 64, classes: ['circle'], square: true });
    const model = createFreshModel('yolo9t', { nc: 1 });
    const tensors = (): Map<string, Float32Array | BigInt64Array> => new Map([...model.network!.namedTensors()].map(([k, p]) => [k, (p.value.data as Float32Array).slice()]));
    const before = tensors();
    try {
      const r = await model.train({ data: yaml, epochs: 2, batch: 2, imgsz: 64, workers: 0, seed: 0, project: join(tmp, 'runs'), name: 'm', verbose: false });
      // Two epochs with eval_interval 10: the final epoch still validates, so best.pt exists (it is
      // that epoch's weights, as last.pt is) and is what comes back.
      assert.equal(r.best_checkpoint, join(tmp, 'runs', 'm', 'weights', 'best.pt'));
      assert.equal(r.last_checkpoint, join(tmp, 'runs', 'm', 'weights', 'last.pt'));
      assert.ok(existsSync(r.last_checkpoint!) && existsSync(r.best_checkpoint!));
      assert.equal(r.epoch_metrics.length, 1);
      assert.equal(r.epoch_metrics[0]!.epoch, 2);
      assert.equal(r.best_epoch, 2);
      const saved = (await loadCheckpointFile(r.best_checkpoint!)).stateDict;
      const after = tensors();
      assert.equal(after.size, saved.size);
      let changed = 0;
      for (const [k, v] of after) {
        assert.deepEqual(v, saved.get(k)!.data, `${k}: the model carries the checkpoint's tensor`);
        if (!isDeepStrictEqual(v, before.get(k))) changed++;
      }
      assert.ok(changed > after.size / 2, `training changed ${changed} of ${after.size} tensors`);
      assert.equal(model.names[0], 'circle');
      // The trained model is what best.pt loads as: its input size (the training imgsz, not the
      // fresh model's 640), its file and format.
      assert.deepEqual(model.imgsz, [64, 64]);
      assert.equal(model.weightsPath, r.best_checkpoint);
      assert.equal(model.format, 'pt');
      // Predictions at the default size are those of best.pt loaded afresh.
      const val = join(tmp, 'd', 'images', 'val');
      const fresh = await LibreYOLO(r.best_checkpoint!, { progress: false });
      try {
        assert.deepEqual(fresh.imgsz, model.imgsz);
        const [ours, theirs] = [await model.predict(val, { conf: 0.001 }) as Results[], await fresh.predict(val, { conf: 0.001 }) as Results[]];
        assert.equal(ours.length, 2);
        assert.ok(ours.some((o) => o.length > 0), 'a trained model finds something at conf 0.001');
        ours.forEach((o, i) => assert.deepEqual(o.boxes.data, theirs[i]!.boxes.data));
      } finally {
        await fresh.close();
      }
    } finally {
      await model.close();
    }
  });
});
