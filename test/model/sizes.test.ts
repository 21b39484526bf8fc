/**
 * Sizes s, m and c: a checkpoint written in the original's .pt format (seeded fresh weights) loads
 * through LibreYOLO(), reports the original's parameter count, and runs predict.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LibreYOLO, SAMPLE_IMAGE, type Results } from '../../src/index.ts';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import { saveCheckpointPt } from '../../src/weights/checkpoint.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { tempDir } from '../helpers/temp.ts';

const PARAMS = { s: 7_226_192, m: 20_123_984, c: 25_498_736 } as const;

describe('YOLOv9 s, m and c', () => {
  const dir = tempDir();
  for (const [size, params] of Object.entries(PARAMS)) {
    it(`size ${size}: builds, loads an original-format checkpoint and predicts`, async () => {
      const net = yolo9Family.create({ size, nc: 80 });
      const sd = new Map<string, HostTensor>([...net.namedTensors()].map(([k, p]) => [k, p.value]));
      const path = join(dir, `LibreYOLO9${size}.pt`);
      const names = Object.fromEntries(Array.from({ length: 80 }, (_, k) => [k, `class${k}`]));
      await saveCheckpointPt(path, sd, { schema_version: '1.0', libreyolo_version: '0.1.0', model_family: 'yolo9', size, task: 'detect', nc: 80, names, imgsz: 640 });
      const model = await LibreYOLO(path);
      try {
        assert.equal(model.size, size);
        assert.equal(model.parameterCount(), params);
        // The checkpoint's tensors are the ones the network now holds, key by key.
        const loaded = new Map([...model.network!.namedTensors()].map(([k, p]) => [k, p.value]));
        assert.equal(loaded.size, sd.size);
        for (const [k, t] of sd) assert.deepEqual(loaded.get(k)?.data, t.data, `${k} survives the .pt round trip`);
        // Fresh weights score far below the default conf; a near-zero conf gives max_det real boxes to check.
        const r = (await model.predict(SAMPLE_IMAGE, { imgsz: 320, conf: 1e-9, max_det: 50 })) as Results;
        assert.deepEqual(r.orig_shape, [360, 640]);
        assert.ok(r.speed.inference > 0);
        assert.equal(r.length, 50);
        for (let i = 0; i < r.boxes.length; i++) {
          const [x1, y1, x2, y2] = r.boxes.xyxy[i]!;
          assert.ok([x1, y1, x2, y2].every(Number.isFinite) && x1! >= 0 && y1! >= 0 && x2! <= 640 && y2! <= 360 && x2! > x1! && y2! > y1!, `box ${i}: ${[x1, y1, x2, y2]}`);
        }
      } finally {
        await model.close();
      }
    });
  }
});
