/**
 * An exported file whose input height and width are static runs at that size only: `LibreYOLO()`
 * says so (`fixedInput`), predict at another imgsz is refused with what to do instead of ONNX
 * Runtime's raw dimension error, and predict without imgsz runs at the file's size; a dynamic
 * export runs at any size. `profile infer` at its default --imgsz profiles such a file at its own size.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runInferProfile } from '../../src/app/infer-run.ts';
import { LibreYOLOError } from '../../src/errors.ts';
import { LibreYOLO, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { tempDir } from '../helpers/temp.ts';

const PHOTO = join(import.meta.dirname, '..', 'assets', 'parkour.jpg');

describe('an export with a static input size', () => {
  const dir = tempDir();
  let fixed: LibreYOLOModel;
  let free: LibreYOLOModel;
  let fixedPath = '';

  before(async () => {
    const source = await LibreYOLO(undefined, { progress: false });
    try {
      fixedPath = await source.export({ format: 'onnx', imgsz: 320, output_path: join(dir, 'fixed.onnx') });
      await source.export({ format: 'onnx', imgsz: 320, dynamic: true, output_path: join(dir, 'free.onnx') });
    } finally {
      await source.close();
    }
    fixed = await LibreYOLO(fixedPath, { progress: false });
    free = await LibreYOLO(join(dir, 'free.onnx'), { progress: false });
  });
  after(async () => {
    await fixed?.close();
    await free?.close();
  });

  it('says its input is fixed, at the size it was exported at', () => {
    assert.equal(fixed.fixedInput, true);
    assert.deepEqual(fixed.imgsz, [320, 320]);
    assert.equal(free.fixedInput, false);
  });

  it('refuses another imgsz with what to do, and runs at its own size without one', async () => {
    await assert.rejects(fixed.predict(PHOTO, { imgsz: 640 }), (e: unknown) => {
      assert.ok(e instanceof LibreYOLOError, String(e));
      assert.equal(e.code, 'invalid_imgsz');
      assert.equal(e.message, `${fixedPath} takes a fixed 320x320 input (it was exported at that size), so imgsz=640 cannot run on it. ` +
        'Leave imgsz unset (or pass imgsz=320), or export the model again at the size you need.');
      return true;
    });
    const r = await fixed.predict(PHOTO) as Results;
    assert.ok(r.boxes.length > 0, 'the bundled model finds people in the photo');
    assert.equal((await fixed.predict(PHOTO, { imgsz: 320 }) as Results).boxes.length, r.boxes.length);
  });

  it('profile infer at the default --imgsz profiles it at its own size and says so; an asked --imgsz is refused', async () => {
    const base = { weights: fixedPath, size: 't', batch: 1, half: false, ampDtype: 'float16', warmup: 1, runs: 2, repeat: 1, conf: 0.25, iou: 0.45, maxDet: 300, device: 'cpu', trace: false };
    const warnings: string[] = [];
    const run = await runInferProfile({ ...base, source: PHOTO, imgsz: 640, imgszIsDefault: true, project: join(dir, 'p'), warn: (m) => warnings.push(m) });
    assert.equal((run.profile.config as { imgsz: unknown }).imgsz, 320);
    assert.deepEqual(warnings, [`--imgsz: ${fixedPath} takes a fixed 320x320 input, so it is profiled at that size (not the default 640).`]);
    await assert.rejects(runInferProfile({ ...base, source: PHOTO, imgsz: 640, project: join(dir, 'q') }), /takes a fixed 320x320 input/);
  });

  it('a dynamic export runs at another imgsz', async () => {
    const r = await free.predict(PHOTO, { imgsz: 416 }) as Results;
    assert.ok(r.boxes.length > 0);
  });
});
