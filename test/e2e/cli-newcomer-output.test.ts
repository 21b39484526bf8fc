/**
 * What a newcomer reads on stderr from the real `libreyolo` process: warnings in the command's own
 * `Warning: ...` form (not Node's `(node:PID) [LIBREYOLO] Warning:` banner with its `--trace-warnings`
 * hint), a missing device said once, in our words, without ONNX Runtime's native log line first, and
 * progress that reads as lines in a log file (stderr here is a pipe, as in CI or `2> log`), and profile
 * counts below the original's floors said out loud (raised with a warning, or refused), not changed
 * behind the user's back.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { REPO_ROOT } from '../helpers/fixtures.ts';
import { DEFAULT_MODEL_PATH } from '../../src/assets.ts';
import { generateSynthDataset } from '../../src/data/synth.ts';

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

  it('profile infer --runs 1 warns that it measures the minimum of 2; --max-det 0 and --threads 0 exit 2 before anything runs', async () => {
    const project = join(cwd, 'prof');
    const r = await runCli(['profile', 'infer', '--device', 'cpu', '--weights', 'LibreYOLO9t-shapes', '--imgsz', '160', '--warmup', '0', '--runs', '1', '--no-trace', '--project', project], cwd);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^Warning: --runs 1 is below its minimum of 2; using 2$/m);
    const profile = JSON.parse(readFileSync(join(project, 'infer', 'profile.json'), 'utf8')) as { latency: { n: number } };
    assert.equal(profile.latency.n, 2, 'the profile holds the runs the warning names');
    for (const [flag, message] of [['--max-det', '--max-det must be an integer >= 1, got 0'], ['--threads', '--threads must be an integer >= 1, got 0']]) {
      const bad = await runCli(['profile', 'infer', '--device', 'cpu', '--weights', 'LibreYOLO9t-shapes', flag!, '0', '--project', join(cwd, 'never')], cwd);
      assert.equal(bad.code, 2, bad.stderr);
      assert.equal(bad.stderr, `Error: ${message}\n`);
    }
    assert.equal(existsSync(join(cwd, 'never')), false);
    const run = await runCli(['profile', 'run', 'never.yaml', '--device', 'cpu', '--batch', '0'], cwd);
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stderr, 'Error: --batch must be an integer >= 1 (or -1), got 0\n');
  });

  it('quantize of an exported .onnx exits 5 before claiming anything: no "Quantized ..." line, then an error about export', async () => {
    const onnx = join(cwd, 'shapes.onnx');
    const e = await runCli(['export', `output_path=${onnx}`], cwd);
    assert.equal(e.code, 0, e.stderr);
    const r = await runCli(['quantize', 'recipe=fp16', `model=${onnx}`], cwd);
    assert.equal(r.code, 5, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `Error: Cannot quantize ${onnx}: it is an exported ONNX file, and quantize writes its .onnx from the network of the .pt or .safetensors weights. Pass those weights instead.\n`);
  });

  it('libreyolo, libreyolo data and libreyolo profile alone list their commands on stdout (exit 0), as --help does', async () => {
    for (const words of [[], ['data'], ['profile']]) {
      const r = await runCli(words, cwd);
      const help = await runCli([...words, '--help'], cwd);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, '', `libreyolo ${words.join(' ')}: nothing on stderr`);
      assert.match(r.stdout, /^Usage: libreyolo/);
      assert.equal(r.stdout, help.stdout);
    }
  });

  it('predict with a positional source and a different source= exits 2 naming both, instead of using one silently', async () => {
    const r = await runCli(['predict', 'first.jpg', 'source=second.jpg'], cwd);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr, "Error: Two sources given: 'first.jpg' and source=second.jpg. Pass them one way (as arguments or as source=).\n");
  });
});
