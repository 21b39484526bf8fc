/**
 * YOLOX sizes t, s, m, l, x: each builds with the original's parameter count (yolox.md 1.1), writes a
 * checkpoint in the original's format from fresh weights, loads back through LibreYOLO() as that
 * size (with its own input size) and runs. Also: other class counts, and metadata-less state dicts
 * with the prefixes the original's loader strips.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { LibreYOLO } from '../../src/index.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { yoloxFamily } from '../../src/models/yolox/family.ts';
import { yoloxDims, type YoloxSize } from '../../src/models/yolox/config.ts';
import type { YoloxNetwork } from '../../src/models/yolox/network.ts';
import { loadCheckpointFile, saveCheckpointPt } from '../../src/weights/checkpoint.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { fixture } from '../helpers/fixtures.ts';

/** yolox.md 1.1: parameters at nc = 80, state_dict keys, default input side. */
const SIZES: Array<[YoloxSize, number, number, number]> = [
  ['t', 5_055_855, 462, 416],
  ['s', 8_968_255, 462, 640],
  ['m', 25_326_495, 606, 640],
  ['l', 54_208_895, 750, 640],
  ['x', 99_071_455, 894, 640],
];

const names = (nc: number): Record<number, string> => Object.fromEntries(Array.from({ length: nc }, (_, k) => [k, `class${k}`]));

function stateDictOf(net: YoloxNetwork): Map<string, HostTensor> {
  return new Map([...net.namedTensors()].map(([k, p]) => [k, p.value]));
}

describe('YOLOX sizes t, s, m, l, x', () => {
  const dir = mkdtempSync(join(tmpdir(), 'libreyolo-yolox-sizes-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [size, params, keys, imgsz] of SIZES) {
    it(`${size}: ${params} parameters, ${keys} keys; its checkpoint loads as yolox-${size} at ${imgsz} and runs`, async () => {
      const net = yoloxFamily.create({ size }) as YoloxNetwork;
      assert.equal(net.parameterCount(), params);
      const sd = stateDictOf(net);
      assert.equal(sd.size, keys);
      const path = join(dir, `LibreYOLOX${size}.pt`);
      await saveCheckpointPt(path, sd, { schema_version: '1.0', model_family: 'yolox', size, task: 'detect', nc: 80, names: names(80), imgsz: 640 });
      const model = await LibreYOLO(path, { threads: 2 });
      try {
        assert.equal(model.family.name, 'yolox');
        assert.equal(model.size, size);
        // The input size is the size's own, not the checkpoint's imgsz (the original's INPUT_SIZES).
        assert.deepEqual(model.imgsz, [imgsz, imgsz]);
        assert.equal(model.parameterCount(), params);
        const loaded = new Map((model.network as YoloxNetwork).namedTensors());
        for (const key of ['backbone.backbone.stem.conv.conv.weight', 'head.cls_preds.2.bias', 'backbone.C3_n4.conv3.bn.running_var']) {
          assert.deepEqual(loaded.get(key)!.value.data, sd.get(key)!.data, key);
        }
        const out = await model.forward({ dtype: 'float32', dims: [1, 3, 64, 96], data: new Float32Array(3 * 64 * 96).fill(114) });
        assert.deepEqual(out.dims, [1, 8 * 12 + 4 * 6 + 2 * 3, 85]);
        assert.ok((out.data as Float32Array).every(Number.isFinite));
      } finally {
        await model.close();
      }
      rmSync(path);
    });
  }

  it('other class counts: only the head changes, by 3 (H + 1) per class (yolox.md 1.1)', async () => {
    for (const size of ['n', 's'] as const) {
      const net = yoloxFamily.create({ size, nc: 3 });
      assert.equal(net.nc, 3);
      const h = yoloxDims(size).hidden;
      assert.equal(net.parameterCount(), (size === 'n' ? 912_159 : 8_968_255) + 3 * (h + 1) * (3 - 80));
    }
    assert.equal(yoloxFamily.create({ size: 'n', nc: 1 }).parameterCount(), 896_754);
    const path = join(dir, 'three.pt');
    await saveCheckpointPt(path, stateDictOf(yoloxFamily.create({ size: 'n', nc: 3 }) as YoloxNetwork), { model_family: 'yolox', size: 'n', nc: 3, names: { 0: 'a', 1: 'b', 2: 'c' } });
    const model = await LibreYOLO(path);
    try {
      assert.equal(model.nc, 3);
      assert.equal(model.names[2], 'c');
      const out = await model.forward({ dtype: 'float32', dims: [1, 3, 64, 64], data: new Float32Array(3 * 64 * 64) });
      assert.deepEqual(out.dims, [1, 84, 8]);
    } finally {
      await model.close();
    }
  });

  it('a metadata-less state dict with a module. prefix (upstream yolox_*.pth style) loads by its tensors', async () => {
    const ref = await loadCheckpointFile(fixture('yoloxn_ref.pt'));
    const prefixed = new Map([...ref.stateDict].map(([k, v]) => [`module.${k}`, v]));
    const path = join(dir, 'yolox_nano.pth');
    await saveCheckpointPt(path, prefixed);
    const model = await LibreYOLO(path);
    try {
      assert.equal(model.family.name, 'yolox');
      assert.equal(model.size, 'n');
      assert.equal(model.nc, 80);
      assert.deepEqual(model.imgsz, [416, 416]);
      const io = readSafetensors(new Uint8Array(readFileSync(fixture('yoloxn_ref_io.safetensors'))), 'io').tensors;
      const u8 = io.get('input_u8_bgr_1x3x416x416')!;
      const out = (await model.forward({ dtype: 'float32', dims: u8.dims, data: Float32Array.from(u8.data as Uint8Array) })).data as Float32Array;
      const want = io.get('decoded_1x3x416x416')!.data as Float32Array;
      let m = 0;
      for (let k = 0; k < want.length; k++) if (k % 85 >= 4) m = Math.max(m, Math.abs(out[k]! - want[k]!));
      assert.ok(m <= 1.2e-3, `scores off by ${m}`);
    } finally {
      await model.close();
    }
  });

  it('refuses a checkpoint whose tensors do not fit the size it names', async () => {
    const path = join(dir, 'wrong.pt');
    await saveCheckpointPt(path, stateDictOf(yoloxFamily.create({ size: 'n' }) as YoloxNetwork), { model_family: 'yolox', size: 't' });
    await assert.rejects(LibreYOLO(path), /Shape mismatch for backbone\.backbone\.stem\.conv\.conv\.weight/);
  });
});
