/**
 * What a first run reports: session creation as `speed.load`, apart from `inference`, so a one-image
 * run of the bundled model does not read as 30x slower than it is; times rounded where printed and
 * kept whole in JSON.
 */
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LibreYOLO, SAMPLE_IMAGE, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { runCli } from '../helpers/cli.ts';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('first-call timings', () => {
  let model: LibreYOLOModel;
  let first: Results;
  const warm: Results[] = [];
  before(async () => {
    model = await LibreYOLO('LibreYOLO9t-shapes');
    first = await model.predictOne(SAMPLE_IMAGE);
    for (let k = 0; k < 5; k++) warm.push(await model.predictOne(SAMPLE_IMAGE));
  });
  after(() => model.close());

  it('the first call reports the session build as load, and its inference is within 3x of a warm one', () => {
    assert.ok(first.speed.load !== undefined && first.speed.load > 0, `no load figure: ${JSON.stringify(first.speed)}`);
    const warmInference = median(warm.map((r) => r.speed.inference));
    assert.ok(first.speed.inference <= 3 * warmInference, `first inference ${first.speed.inference} ms against warm ${warmInference} ms (load ${first.speed.load} ms)`);
    // Building the session costs far more than a forward of this model: it is not hiding in inference.
    assert.ok(first.speed.load > first.speed.inference, `load ${first.speed.load} ms <= inference ${first.speed.inference} ms`);
    for (const r of warm) assert.equal(r.speed.load, undefined, 'a warm call paid no load');
  });

  it('prints times rounded and keeps them whole in JSON', () => {
    const printed = inspect(first.speed);
    assert.doesNotMatch(printed, /\d\.\d{3}/, printed);
    assert.match(printed, /load: \d+(\.\d{1,2})?/);
    assert.deepEqual(JSON.parse(JSON.stringify(first.speed)), { ...first.speed });
    assert.match(String(first), /^.*sample\.jpg: 640x360 circle: 2, .*; \d+\.\dms preprocess, \d+\.\dms inference, \d+\.\dms postprocess, \d+\.\dms load$/);
  });
});

describe('predict CLI first run', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'libreyolo-first-run-'));
  after(() => rmSync(cwd, { recursive: true, force: true }));

  it('names the model load apart from the per-image times', async () => {
    const r = await runCli(['predict'], cwd);
    assert.equal(r.code, 0, r.stderr);
    const line = /^image 1\/1 .*: 640x360 (.*), ([\d.]+)ms$/m.exec(r.stdout);
    assert.ok(line, r.stdout);
    assert.match(line[1]!, /^circle: 2, /);
    const speed = /^Speed: [\d.]+ms preprocess, ([\d.]+)ms inference, .*\(model load ([\d.]+)ms\)$/m.exec(r.stdout);
    assert.ok(speed, r.stdout);
    assert.ok(Number(speed[2]) > Number(speed[1]), r.stdout);
  });
});
