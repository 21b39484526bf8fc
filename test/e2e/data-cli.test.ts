import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

let base: string;
before(async () => { base = await mkdtemp(join(tmpdir(), 'ly-data-cli-')); });
after(async () => { await rm(base, { recursive: true, force: true }); });

const BIN = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url));

function cli(args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('libreyolo data', () => {
  it('synth writes a dataset and check reads it back', () => {
    const out = join(base, 'cli');
    const r = cli(['data', 'synth', '--out', out, '--seed', '3', '--train', '4', '--val', '2', '--imgsz', '64', '--classes', 'triangle,cross', '--json']);
    assert.equal(r.status, 0, r.stderr);
    const first = JSON.parse(r.stdout);
    assert.deepEqual(first.names, ['triangle', 'cross']);
    assert.equal(first.data, join(out, 'data.yaml'));
    const c = cli(['data', 'check', join(out, 'data.yaml'), '--json']);
    assert.equal(c.status, 0, c.stderr);
    const check = JSON.parse(c.stdout);
    assert.equal(check.splits.train.images, 4);
    assert.equal(check.splits.val.images, 2);
    const again = cli(['data', 'synth', '--out', out]);
    assert.equal(again.status, 2);
    assert.match(again.stderr, /already has files; choose another --out or pass --overwrite/);
  });

  it('a missing bundled dataset exits 3 and names the URL and the offline alternative', () => {
    const r = cli(['data', 'check', 'coco8'], { LIBREYOLO_DATASETS_DIR: join(base, 'none'), HF_HUB_OFFLINE: '1' });
    assert.equal(r.status, 3);
    assert.match(r.stderr, /https:\/\/huggingface\.co\/datasets\/LibreYOLO\/coco8\/resolve\/main\/coco8\.zip[\s\S]*libreyolo data synth/);
    const bad = cli(['data', 'synth', '--out', join(base, 'x'), '--classes', 'blob']);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /Unknown shape class 'blob'/);
  });
});
