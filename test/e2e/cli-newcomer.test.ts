/**
 * What a newcomer trips on through the real `libreyolo` process: a missing `data` for val said as
 * train says it, and the original's training fields that change nothing here warned about, never
 * silently accepted.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';

const cwd = mkdtempSync(join(tmpdir(), 'libreyolo-newcomer-'));
after(() => rmSync(cwd, { recursive: true, force: true }));

describe('newcomer CLI paths', { concurrency: 2 }, () => {
  it('model=<a folder> is a load error naming the mistake (exit 4), not a raw EISDIR', async () => {
    const r = await runCli(['predict', `model=${cwd}`], cwd);
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /^Error: Cannot load .*: it is a folder, not a weights file\. Pass a \.pt, \.safetensors or \.onnx file/m);
  });

  it('the model line shows the input the run uses (imgsz=100 runs at 128 on the stride-32 bundled model)', async () => {
    const r = await runCli(['predict', 'imgsz=100'], cwd);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /imgsz 100 is not a multiple of 32; using \[128, 128\]/);
    assert.match(r.stdout, /^Model: yolo9-t .*, input 128x128, device cpu$/m);
    const plain = await runCli(['predict'], cwd);
    assert.match(plain.stdout, /^Model: yolo9-t .*, input 160x160, device cpu$/m);
  });

  it('val without data exits 2 with the message train gives', async () => {
    const r = await runCli(['val', 'model=never-loaded.pt'], cwd);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^Error: val: data is required \(a dataset YAML path or a built-in name such as coco8\)\.$/m);
    const t = await runCli(['train', 'epochs=1'], cwd);
    assert.equal(t.code, 2, t.stderr);
    assert.match(t.stderr, /^Error: train: data is required \(a dataset YAML path or a built-in name such as coco8\)\.$/m);
  });

  it('train warns that sync_bn has no effect on one device, as in the original, and says nothing at its default', async () => {
    const r = await runCli(['train', 'data=missing.yaml', 'sync_bn=true'], cwd);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /train: sync_bn has no effect on one device: the original converts BatchNorm to SyncBatchNorm only in multi-GPU \(DDP\) training/);
    assert.match(r.stderr, /^Error: Dataset not found: 'missing\.yaml'/m);
    const quiet = await runCli(['train', 'data=missing.yaml'], cwd);
    assert.equal(quiet.code, 3, quiet.stderr);
    assert.doesNotMatch(quiet.stderr, /has no effect/);
  });
});
