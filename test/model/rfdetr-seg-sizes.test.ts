/**
 * RF-DETR-seg s, m, l, x, xx (segmentation.md 3.1-3.2): each builds with the original's parameter
 * and state-dict key counts, and a checkpoint in the original's format made from a fresh model's
 * state dict (v1.0 wrapper with task segment; for l/x/xx the upstream `{model, args, epoch}` form
 * with `model.`-prefixed keys and no task, recognised by its segmentation_head keys and sized by its
 * position table) loads through LibreYOLO() at the size's native input and runs one forward. The
 * forward of s runs at its native 384; the bigger sizes run at 48x48 (a multiple of 24) to keep the
 * test cheap: the native-size graph is the same code with a larger grid.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LibreYOLO, SAMPLE_IMAGE, type Results } from '../../src/index.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { rfdetrFamily } from '../../src/models/rfdetr/family.ts';
import { saveCheckpointPt } from '../../src/weights/checkpoint.ts';
import { PyNamespace, PyOrderedDict } from '../../src/weights/pickle/index.ts';
import { writeTorchCheckpoint } from '../../src/weights/torch-checkpoint.ts';
import { writeFileAtomic } from '../../src/util/fs.ts';
import { tempDir } from '../helpers/temp.ts';

/** segmentation.md 3.2 (nc 80), keys 6L + 11 more than detection with L decoder layers; inputs and queries of 3.1. */
const SIZES = {
  s: { params: 33_675_127, keys: 544, imgsz: 384, queries: 100, forward: 384 },
  m: { params: 35_658_279, keys: 572, imgsz: 432, queries: 200, forward: 48 },
  l: { params: 35_837_991, keys: 572, imgsz: 504, queries: 200, forward: 48 },
  x: { params: 38_077_655, keys: 600, imgsz: 624, queries: 300, forward: 48 },
  xx: { params: 38_612_183, keys: 600, imgsz: 768, queries: 300, forward: 48 },
} as const;

describe('RF-DETR-seg s, m, l, x, xx', () => {
  const dir = tempDir();
  it('n builds with the original parameter count too, and detection has no x or xx', () => {
    assert.equal(rfdetrFamily.create({ size: 'n', task: 'segment' }).parameterCount(), 33_541_495);
    assert.throws(() => rfdetrFamily.create({ size: 'x' }), /Unknown rfdetr size 'x'\. Sizes: n, s, m, l\./);
  });
  for (const [size, want] of Object.entries(SIZES)) {
    it(`size ${size}: ${want.params} parameters, ${want.keys} keys; an original-format checkpoint loads at ${want.imgsz} and runs (forward at ${want.forward})`, async () => {
      const net = rfdetrFamily.create({ size, nc: 80, task: 'segment' });
      assert.equal(net.parameterCount(), want.params);
      const entries = [...net.namedTensors()];
      assert.equal(entries.length, want.keys);
      let path: string;
      if (size === 's' || size === 'm') {
        path = join(dir, `LibreRFDETR${size}-seg.pt`);
        const names = Object.fromEntries(Array.from({ length: 80 }, (_, k) => [k, `class${k}`]));
        await saveCheckpointPt(path, new Map(entries.map(([k, p]) => [k, p.value])), { schema_version: '1.0', libreyolo_version: '0.1.0', model_family: 'rfdetr', size, task: 'segment', nc: 80, names, imgsz: want.imgsz });
      } else {
        path = join(dir, `checkpoint_${size}.pth`);
        const sd = new Map<string, HostTensor>(entries.map(([k, p]) => [`model.${k}`, p.value]));
        await writeFileAtomic(path, writeTorchCheckpoint({ model: new PyOrderedDict(sd), args: new PyNamespace([['resolution', want.imgsz]]), epoch: 1 }));
      }
      const model = await LibreYOLO(path, { threads: 2 });
      try {
        assert.equal(model.family.name, 'rfdetr');
        assert.equal(model.task, 'segment');
        assert.equal(model.size, size);
        assert.deepEqual(model.imgsz, [want.imgsz, want.imgsz]);
        assert.equal(model.parameterCount(), want.params);
        const r = (await model.predict(SAMPLE_IMAGE, { conf: 0, imgsz: want.forward })) as Results;
        // Fresh heads: all k = num_select pairs pass conf 0, each with a mask at the image size.
        assert.equal(r.boxes.length, want.queries);
        assert.ok(r.masks);
        assert.deepEqual(r.masks.shape, [want.queries, 360, 640]);
      } finally {
        await model.close();
      }
    });
  }
});
