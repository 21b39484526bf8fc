/**
 * The predict forms a strict TypeScript user can use without casts: their declared types (checked by
 * `npm run typecheck`, which covers this file) and what they return at runtime.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, copyFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  LibreYOLO, LibreYOLOError, Results, SAMPLE_IMAGE, type CaptureGraphOptions, type ImageSource, type LibreYOLOModel, type QuantizeOptions,
  type RawPixels, type SummaryRow,
} from '../../src/index.ts';

describe('predict result types', () => {
  let model: LibreYOLOModel;
  let folder: string;
  before(async () => {
    model = await LibreYOLO();
    folder = mkdtempSync(join(tmpdir(), 'libreyolo-types-'));
    for (const k of [0, 1]) copyFileSync(SAMPLE_IMAGE, join(folder, `frame_${k}.jpg`));
  });
  after(async () => {
    await model.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('predictOne(path) is one Results', async () => {
    const r: Results = await model.predictOne(SAMPLE_IMAGE);
    assert.ok(r instanceof Results);
    assert.ok(r.length > 0, 'the bundled model finds shapes in the bundled sample');
  });

  it('predictOne refuses a folder before running anything, naming it and the way out', async () => {
    await assert.rejects(model.predictOne(folder), (e: unknown) =>
      e instanceof LibreYOLOError && e.code === 'config_type_error' && e.message === `predictOne() takes one image, but ${folder} holds 2 images; use predictAll() for a folder or a list`);
  });

  it('predictAll is always an array: one element for a single image, one per file for a folder', async () => {
    const one: Results[] = await model.predictAll(SAMPLE_IMAGE);
    assert.equal(one.length, 1);
    assert.ok(one[0] instanceof Results);
    const many: Results[] = await model.predictAll(folder);
    assert.deepEqual(many.map((r) => r.path), [join(folder, 'frame_0.jpg'), join(folder, 'frame_1.jpg')]);
    assert.deepEqual(many[0]!.summary(), one[0]!.summary(), 'a copy of the sample gives the same detections');
  });

  it('predict(bytes) is typed and returned as one Results; predict(list) as an array', async () => {
    const fromBytes: Results = await model.predict(readFileSync(SAMPLE_IMAGE));
    assert.ok(fromBytes instanceof Results);
    const fromList: Results[] = await model.predict([SAMPLE_IMAGE]);
    assert.ok(Array.isArray(fromList) && fromList.length === 1);
  });

  it('predictOne / predictAll refuse stream: true instead of ignoring it', async () => {
    const opts = { stream: true } as unknown as { stream?: false };
    assert.throws(() => model.predictAll(SAMPLE_IMAGE, opts), /predictAll\(\) returns its results together; for an async iterator call predict\(source, \{ stream: true \}\)/);
    await assert.rejects(model.predictOne(SAMPLE_IMAGE, opts), /predictOne\(\) returns its results together/);
  });

  it('the types the public methods take and return are importable from the package: a helper can be typed without reaching into src/', async () => {
    const pixels: RawPixels = { data: new Uint8Array(64 * 64 * 3).fill(127), width: 64, height: 64 };
    const sources: ImageSource[] = [SAMPLE_IMAGE, pixels];
    const rows: SummaryRow[][] = (await model.predictAll(sources)).map((r) => r.summary());
    assert.equal(rows.length, 2);
    assert.ok(rows[0]!.length > 0, 'the sample has shapes');
    assert.deepEqual(rows[1], [], 'a flat grey image has none');
    const capture: CaptureGraphOptions = { imgsz: 160, batch: 1 };
    const recipe: QuantizeOptions = { recipe: 'fp16' };
    assert.equal(typeof capture.imgsz, 'number');
    assert.equal(recipe.recipe, 'fp16');
  });
});
