/**
 * RF-DETR s, m and l: a checkpoint in the original's .pt format (seeded fresh weights, the upstream
 * `model.` prefix on every key as a trainer checkpoint has it) loads through LibreYOLO(), reports the
 * original's parameter count (rfdetr.md 1.2) and state-dict key count, and predicts at its native size.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LibreYOLO, SAMPLE_IMAGE, type Results } from '../../src/index.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { rfdetrFamily } from '../../src/models/rfdetr/family.ts';
import { saveCheckpointPt } from '../../src/weights/checkpoint.ts';
import { PyNamespace, PyOrderedDict, pyFloat } from '../../src/weights/pickle/index.ts';
import { writeTorchCheckpoint } from '../../src/weights/torch-checkpoint.ts';
import { writeFileAtomic } from '../../src/util/fs.ts';
import { tempDir } from '../helpers/temp.ts';

const SIZES = {
  s: { params: 32_075_190, keys: 487, imgsz: 512 },
  m: { params: 33_651_478, keys: 509, imgsz: 576 },
  l: { params: 33_897_238, keys: 509, imgsz: 704 },
} as const;

describe('RF-DETR s, m and l', () => {
  const dir = tempDir();
  for (const [size, want] of Object.entries(SIZES)) {
    it(`size ${size}: builds with the original's parameter count, loads an original-format checkpoint and predicts at ${want.imgsz}`, async () => {
      const net = rfdetrFamily.create({ size, nc: 80 });
      assert.equal(net.parameterCount(), want.params);
      const sd = new Map<string, HostTensor>([...net.namedTensors()].map(([k, p]) => [`model.${k}`, p.value]));
      assert.equal(sd.size, want.keys);
      const path = join(dir, `LibreRFDETR${size}.pt`);
      const names = Object.fromEntries(Array.from({ length: 80 }, (_, k) => [k, `class${k}`]));
      await saveCheckpointPt(path, sd, { schema_version: '1.0', libreyolo_version: '0.1.0', model_family: 'rfdetr', size, task: 'detect', nc: 80, names, imgsz: want.imgsz });
      const model = await LibreYOLO(path, { threads: 2 });
      try {
        assert.equal(model.family.name, 'rfdetr');
        assert.equal(model.size, size);
        assert.equal(model.nc, 80);
        assert.deepEqual(model.imgsz, [want.imgsz, want.imgsz]);
        assert.equal(model.parameterCount(), want.params);
        const r = (await model.predict(SAMPLE_IMAGE, { conf: 0 })) as Results;
        assert.deepEqual(r.orig_shape, [360, 640]);
        // Fresh heads (class bias -log 99): 300 finite detections with scores near 0.01.
        assert.equal(r.boxes.length, 300);
        for (let i = 0; i < r.boxes.length; i++) {
          assert.ok(r.boxes.xyxy[i]!.every(Number.isFinite));
          assert.ok(r.boxes.confData[i]! > 0 && r.boxes.confData[i]! < 0.5);
        }
      } finally {
        await model.close();
      }
    });
  }
});

describe('RF-DETR upstream checkpoint format', () => {
  it("loads {model, args: argparse.Namespace, epoch}: a nameless 91-column COCO head reads as the 80 COCO classes (the network keeps its 91 columns), the size comes from the position table", async () => {
    const dir = tempDir();
    const net = rfdetrFamily.create({ size: 'n', nc: 90 });
    const sd = new Map<string, HostTensor>([...net.namedTensors()].map(([k, p]) => [k, p.value]));
    const args = new PyNamespace([['num_queries', 300], ['group_detr', 13], ['resolution', 384], ['lr', pyFloat(1e-4) as never]]);
    const path = join(dir, 'checkpoint_best_regular.pth');
    await writeFileAtomic(path, writeTorchCheckpoint({ model: new PyOrderedDict(sd), args, epoch: 10 }));
    const model = await LibreYOLO(path, { threads: 2 });
    try {
      assert.equal(model.family.name, 'rfdetr');
      assert.equal(model.size, 'n');
      assert.equal(model.nc, 80);
      assert.equal(model.names[0], 'person');
      assert.equal(model.parameterCount(), 30_431_318 + 10 * 256 * 14 + 10 * 14);
    } finally {
      await model.close();
    }
  });
});
