import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { main } from '../src/cli/main.ts';

let base: string;
before(async () => { base = await mkdtemp(join(tmpdir(), 'ly-data-cli-')); });
after(async () => { await rm(base, { recursive: true, force: true }); });

describe('libreyolo data', () => {
  it('synth writes a dataset and check reads it back; a missing bundled set exits 3', async () => {
    const out = join(base, 'cli');
    const writes: string[] = [];
    const orig = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => { writes.push(String(s)); return true; }) as typeof process.stdout.write;
    let rc: number, rc2: number;
    try {
      rc = await main(['data', 'synth', '--out', out, '--seed', '3', '--train', '4', '--val', '2', '--imgsz', '64', '--classes', 'triangle,cross', '--json']);
      rc2 = await main(['data', 'check', join(out, 'data.yaml'), '--json']);
    } finally {
      process.stdout.write = orig;
    }
    assert.equal(rc, 0);
    const first = JSON.parse(writes[0]!);
    assert.deepEqual(first.names, ['triangle', 'cross']);
    assert.equal(first.data, join(out, 'data.yaml'));
    assert.equal(rc2, 0);
    const check = JSON.parse(writes[1]!);
    assert.equal(check.splits.train.images, 4);
    assert.equal(check.splits.val.images, 2);

    const prev = { dir: process.env.LIBREYOLO_DATASETS_DIR, off: process.env.HF_HUB_OFFLINE };
    process.env.LIBREYOLO_DATASETS_DIR = join(base, 'none');
    process.env.HF_HUB_OFFLINE = '1';
    const errs: string[] = [];
    const origErr = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((s: string) => { errs.push(String(s)); return true; }) as typeof process.stderr.write;
    try {
      assert.equal(await main(['data', 'check', 'coco8']), 3);
    } finally {
      process.stderr.write = origErr;
      if (prev.dir === undefined) delete process.env.LIBREYOLO_DATASETS_DIR; else process.env.LIBREYOLO_DATASETS_DIR = prev.dir;
      if (prev.off === undefined) delete process.env.HF_HUB_OFFLINE; else process.env.HF_HUB_OFFLINE = prev.off;
    }
    assert.match(errs.join(''), /coco8\.zip[\s\S]*libreyolo data synth/);
  });
});
