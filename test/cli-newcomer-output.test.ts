/**
 * What a newcomer reads on stderr from the real `libreyolo` process: warnings in the command's own
 * `Warning: ...` form (not Node's `(node:PID) [LIBREYOLO] Warning:` banner with its `--trace-warnings`
 * hint), a missing device said once, in our words, without ONNX Runtime's native log line first, and
 * progress that reads as lines in a log file (stderr here is a pipe, as in CI or `2> log`).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli } from './helpers/cli.ts';
import { REPO_ROOT } from './helpers/fixtures.ts';
import { DEFAULT_MODEL_PATH } from '../src/assets.ts';
import { generateSynthDataset } from '../src/data/synth.ts';

const cwd = mkdtempSync(join(tmpdir(), 'libreyolo-newcomer-output-'));
after(() => rmSync(cwd, { recursive: true, force: true }));

const CUDA_PROVIDER = join(REPO_ROOT, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6', 'linux', 'x64', 'libonnxruntime_providers_cuda.so');

describe('newcomer CLI output', { concurrency: 2 }, () => {
  it('a library warning prints as "Warning: <message>", without Node\'s process-warning banner', async () => {
    const r = await runCli(['predict', 'imgsz=100'], cwd);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^Warning: imgsz 100 is not a multiple of 32; using \[128, 128\]\.$/m);
    assert.doesNotMatch(r.stderr, /\(node:\d+\)|--trace-warnings|\[LIBREYOLO\]/);
  });

  it('device=cuda without the CUDA provider: our message only, no native ORT log line before it (exit 1)', {
    skip: existsSync(CUDA_PROVIDER) ? `the CUDA provider is installed here (${CUDA_PROVIDER})` : false,
  }, async () => {
    const r = await runCli(['predict', 'device=cuda'], cwd);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^Error: Device 'cuda:0' is not available: /);
    assert.match(r.stderr, /ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node/);
    assert.doesNotMatch(r.stderr, /provider_bridge_ort|\[E:onnxruntime/);
  });

  it('val progress in a log file is one line with the final count, not \\r-joined counts', async () => {
    const { yaml } = await generateSynthDataset({ out: join(cwd, 'shapes'), seed: 3, train: 1, val: 4, imgsz: 160 });
    const r = await runCli(['val', `model=${DEFAULT_MODEL_PATH}`, `data=${yaml}`, 'batch=2'], cwd);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /\r/);
    assert.deepEqual(r.stderr.split('\n').filter((l) => l.startsWith('val ')), ['val 4/4 images']);
    assert.match(r.stdout, /^images 4 {2}instances \d+ {2}mAP50 /m);
  });
});
