/**
 * D-FINE through the library (LibreYOLO() on the original's checkpoint): recognition (family, size,
 * nc, names, input size), the predict-session forward at both stored inputs of dfinen_ref_io within
 * the 2x-floor limits (rows paired by content: the proposal order may trade near ties), the stored
 * photo's detections as a set, the 640-only refusal, D-FINE vs DEIM only by metadata or file name,
 * and `libreyolo predict` naming the family and size.
 */
import assert from 'node:assert/strict';
import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { LibreYOLO, type Results } from '../../src/index.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { loadCheckpointFile, saveCheckpointPt } from '../../src/weights/checkpoint.ts';
import { DfineDetector } from '../../src/models/dfine/detector.ts';
import { writeSafetensors } from '../../src/weights/safetensors.ts';
import { assertPhotoDetections, inputOf, limitsOf, predictLayoutErrors, readDfineIo, type DfineIo } from '../helpers/dfine-fixture.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { useModel } from '../helpers/model.ts';
import { tempDir } from '../helpers/temp.ts';
import { cli } from '../helpers/profile-fixtures.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg');
import { DFINE_SHAPES as SHAPES } from '../helpers/dfine-fixture.ts';

describe('D-FINE family through LibreYOLO()', () => {
  const model = useModel('dfinen_ref.pt', { threads: 2 });
  const dir = tempDir();
  let io: DfineIo;
  before(() => {
    io = readDfineIo();
  });

  it('recognises the checkpoint: family, size, classes, input size, parameter count, flags', () => {
    assert.equal(model().family.name, 'dfine');
    assert.equal(model().size, 'n');
    assert.equal(model().nc, 80);
    assert.equal(model().names[0], 'person');
    assert.deepEqual(model().imgsz, [640, 640]);
    assert.equal(model().parameterCount(), 3_782_693);
    const caps = model().family.capabilities;
    assert.deepEqual([caps.SUPPORTS_BATCHED_PREDICT, caps.TTA_ENABLED, caps.TTA_FIXED_SIZE, caps.SUPPORTS_CUDA_GRAPH], [true, true, true, false]);
  });

  for (const shape of SHAPES) {
    it(`the predict session reproduces pred_logits/pred_boxes at ${shape} (xyxy pixels, sigmoid scores) within 2x the fp64 floor`, async () => {
      const out = await model().forward(inputOf(io, shape));
      const { box, score, moved } = predictLayoutErrors(out, io, shape);
      const lim = limitsOf(io);
      assert.ok(box <= lim.box, `box error ${box.toExponential(2)} px > ${lim.box.toExponential(2)}`);
      assert.ok(score <= lim.score, `score error ${score.toExponential(2)} > ${lim.score.toExponential(2)}`);
      console.log(`# ${shape}: box ${box.toExponential(2)} px (limit ${lim.box.toExponential(2)}), score ${score.toExponential(2)} (limit ${lim.score.toExponential(2)}), ${moved} rows paired elsewhere`);
      // Rows trade places only at near-tied proposals (the reference's own ONNX moves 6 at batch 1).
      assert.ok(moved <= 12, `${moved} rows paired with another reference row`);
    });
  }

  it('predict(parkour.jpg, conf 0.5) gives the original\'s 29 detections as a set (boxes within 1e-3 px)', async () => {
    const r = await model().predict(PHOTO, { conf: 0.5 }) as Results;
    assert.equal(r.length, 29);
    assertPhotoDetections(r, io);
  });

  it('an input size other than 640 is refused naming 640 (predict and export)', async () => {
    const check = (e: Error & { code?: string }) => e.code === 'invalid_imgsz' && /640x640 only, got 320x320\. Pass imgsz=640/.test(e.message);
    await assert.rejects(model().predict(PHOTO, { imgsz: 320 }), check);
    await assert.rejects(model().export({ format: 'onnx', imgsz: 320, output_path: join(dir, 'x.onnx') }), check);
  });

  it('D-FINE vs DEIM only by metadata or file name: a disagreeing pair and an unnamed bare state dict are clear errors, DEIM metadata gives DEIM', async () => {
    // The fixture says model_family 'dfine'; a copy named like DEIM contradicts it.
    const deimNamed = join(dir, 'LibreDEIMn.pt');
    copyFileSync(fixture('dfinen_ref.pt'), deimNamed);
    await assert.rejects(LibreYOLO(deimNamed, { progress: false }), (e: Error & { code?: string }) =>
      e.code === 'model_family_mismatch' && /LibreDEIMn\.pt: its file name says DEIM but its model_family metadata says D-FINE/.test(e.message));
    // The reverse: DEIM metadata under a D-FINE name.
    const ckpt = await loadCheckpointFile(fixture('dfinen_ref.pt'));
    const dfineNamed = join(dir, 'LibreDFINEn.pt');
    await saveCheckpointPt(dfineNamed, ckpt.stateDict, { ...ckpt.metadata, model_family: 'deim' });
    await assert.rejects(LibreYOLO(dfineNamed, { progress: false }), /its file name says D-FINE but its model_family metadata says DEIM/);
    // DEIM by metadata alone: loaded as DEIM, not D-FINE.
    const plain = join(dir, 'weights.pt');
    await saveCheckpointPt(plain, ckpt.stateDict, { ...ckpt.metadata, model_family: 'deim' });
    const asDeim = await LibreYOLO(plain, { progress: false, threads: 1 });
    try {
      assert.equal(asDeim.family.name, 'deim');
    } finally {
      await asDeim.close();
    }
    // A bare state dict: the name decides, and a neutral name is ambiguous.
    const bare = (name: string): string => {
      const p = join(dir, name);
      writeSafetensorsFile(p, ckpt.stateDict);
      return p;
    };
    await assert.rejects(LibreYOLO(bare('best.safetensors'), { progress: false }), /Ambiguous D-FINE\/DEIM checkpoint 'best\.safetensors'/);
    const named = await LibreYOLO(bare('dfine_hgnetv2_n_coco.safetensors'), { progress: false, threads: 1 });
    try {
      assert.deepEqual([named.family.name, named.size, named.nc], ['dfine', 'n', 80]);
    } finally {
      await named.close();
    }
  });

  for (const size of ['s', 'm', 'l', 'x'] as const) {
    it(`a size-${size} checkpoint in the original's format without metadata (named LibreDFINE${size}.pt) is read as dfine-${size} from its shapes and predicts at 640`, async () => {
      const net = new DfineDetector({ size, nc: 3 });
      const path = join(dir, `LibreDFINE${size}.pt`);
      await saveCheckpointPt(path, new Map([...net.namedTensors()].map(([k, p]) => [k, p.value])));
      const m = await LibreYOLO(path, { progress: false, threads: 2 });
      try {
        assert.deepEqual([m.family.name, m.size, m.nc, m.parameterCount()], ['dfine', size, 3, net.parameterCount()]);
        const out = await m.forward(inputOf(io, '1x3x640x640'));
        assert.deepEqual(out.dims, [1, 4 + 3, 300]);
        assert.ok((out.data as Float32Array).every(Number.isFinite), 'finite outputs');
        const r = (await m.predict(PHOTO, { conf: 0, max_det: 5 })) as Results;
        assert.equal(r.boxes.length, 5, 'the full predict path runs and keeps max_det rows');
      } finally {
        await m.close();
        rmSync(path, { force: true });
      }
    });
  }

  it('libreyolo predict model=<a copy of dfinen_ref.pt> names the family and size, then the photo\'s detections', async () => {
    const copy = join(dir, 'my-dfine.pt');
    copyFileSync(fixture('dfinen_ref.pt'), copy);
    const r = await cli('predict', `model=${copy}`, `source=${PHOTO}`, 'conf=0.5');
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.match(lines[0]!, /^Model: dfine-n \(D-FINE n, 80 classes, 3,782,693 parameters\) from .*my-dfine\.pt, input 640x640, device cpu$/);
    assert.match(lines[1]!, /^image 1\/1 .*parkour\.jpg: 1280x852 /);
  });
});

function writeSafetensorsFile(path: string, sd: Map<string, HostTensor>): void {
  writeFileSync(path, writeSafetensors(sd));
}
