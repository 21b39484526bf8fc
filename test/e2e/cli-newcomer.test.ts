/**
 * What a newcomer trips on through the real `libreyolo` process: a missing `data` for val said as
 * train says it, and the original's training fields that change nothing here warned about, never
 * silently accepted.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { REPO_ROOT } from '../helpers/fixtures.ts';
import { probeDevice } from '../helpers/gpu.ts';

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

describe('newcomer: profile and devices on a CPU-only machine', { concurrency: 2 }, () => {
  it("bare 'profile infer' keeps the seed's defaults and, without CUDA, names the flags that work here in one line (exit 1, as predict)", async () => {
    const r = await runCli(['profile', 'infer', '--project', join(cwd, 'bare')], cwd);
    if ((await probeDevice('cuda:0')).available) {
      // With CUDA the next default to fail offline is the weights download: predict's exit 4.
      assert.equal(r.code, 4, r.stderr);
      assert.match(r.stderr, /^Error: Model weights not found: .*LibreYOLO9t\.pt\. HF_HUB_OFFLINE=1 .*profile takes it as --weights LibreYOLO9t-shapes\./);
      return;
    }
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stderr, "Error: device 'cuda:0' is not available (onnxruntime-node's CUDA execution provider is not installed on this machine); the profiler never switches devices on its own: pass --device cpu --weights LibreYOLO9t-shapes to profile on the CPU.\n");
    const predict = await runCli(['predict', 'device=0'], cwd);
    assert.equal(predict.code, r.code, 'the same failure, the same exit code');
  });

  it('offline, a published name says the bundled model works, without calling it the default of profile', async () => {
    const r = await runCli(['profile', 'infer', '--device', 'cpu', '--project', join(cwd, 'offline')], cwd);
    assert.equal(r.code, 4, r.stderr);
    assert.doesNotMatch(r.stderr, /it is the default model/);
    assert.match(r.stderr, /it is the default of predict, export, quantize, val and train, and profile takes it as --weights LibreYOLO9t-shapes\./);
  });

  it("'profile infer' takes key=value as predict does, says where timeline.html went and hints with the invocation used (npx)", async () => {
    const project = join(cwd, 'kv');
    const r = await runCli(['profile', 'infer', 'device=cpu', 'weights=LibreYOLO9t-shapes', 'imgsz=160', 'warmup=1', 'runs=2', `project=${project}`], cwd, { npm_command: 'exec' });
    assert.equal(r.code, 0, r.stderr);
    const timeline = join(project, 'infer', 'timeline.html');
    assert.match(r.stdout, new RegExp(`^timeline: ${timeline.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} {2}\\(open it in a browser\\)$`, 'm'));
    assert.ok(existsSync(timeline));
    assert.match(r.stdout, /^next: {4}npx libreyolo profile summary .*profile\.json$/m);
    const profile = JSON.parse(readFileSync(join(project, 'infer', 'profile.json'), 'utf8'));
    assert.equal(profile.config.imgsz, 160, 'imgsz=160 reached the run');
    const cmp = await runCli(['profile', 'compare', join(project, 'infer', 'profile.json'), join(project, 'infer', 'profile.json')], cwd);
    assert.match(cmp.stdout, /\[single run, use 'infer --repeat N' for a significance call\]/);
  });

  it("device=gpu is refused with the accepted names; a WebGPU failure prints our line only, no native noise", async () => {
    const gpu = await runCli(['predict', 'device=gpu'], cwd);
    assert.equal(gpu.code, 2, gpu.stderr);
    assert.equal(gpu.stderr, "Error: device 'gpu' could mean CUDA or WebGPU: pass '0' (or 'cuda:0') for an NVIDIA GPU through CUDA, or 'webgpu' for WebGPU over Vulkan. Accepted devices: 'cpu' (default), '0' / 'cuda' / 'cuda:N' (CUDA), 'webgpu'.\n");
    const web = await runCli(['predict', 'device=webgpu'], cwd);
    if ((await probeDevice('webgpu')).available) return void assert.equal(web.code, 0, web.stderr);
    assert.equal(web.code, 1, web.stderr);
    assert.match(web.stderr, /^Error: Device 'webgpu' is not available: [^\n/]+\nThe WebGPU provider needs a GPU with a Vulkan driver\. Pass device=cpu to run on the CPU\.\n$/);
    assert.doesNotMatch(web.stderr, /XDG_RUNTIME_DIR|\.cc:\d|\.cpp:\d|dawn/i);
  });
});

describe('newcomer: a short train ends with a result', () => {
  it('epochs=2 with the default eval_interval 10 validates the final epoch, writes best.pt and prints where best and last went', async () => {
    const data = join(cwd, 'short-train');
    const synth = await runCli(['data', 'synth', '--out', data, '--seed', '3', '--train', '4', '--val', '2', '--imgsz', '64', '--classes', '1'], cwd);
    assert.equal(synth.code, 0, synth.stderr);
    const r = await runCli(['train', `data=${join(data, 'data.yaml')}`, 'model=yolo9t', 'epochs=2', 'batch=2', 'imgsz=64', 'workers=0', `project=${join(cwd, 'runs')}`, 'name=short'], cwd, {}, { timeoutMs: 600_000 });
    assert.equal(r.code, 0, r.stderr);
    const weights = join(cwd, 'runs', 'short', 'weights');
    const best = new RegExp(`^best: ${join(weights, 'best.pt').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(mAP50-95 \\d\\.\\d{4}, mAP50 \\d\\.\\d{4}, epoch 2\\)$`, 'm');
    assert.match(r.stdout, best);
    assert.match(r.stdout, new RegExp(`^last: ${join(weights, 'last.pt').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    assert.ok(existsSync(join(weights, 'best.pt')) && existsSync(join(weights, 'last.pt')));
    const rows = readFileSync(join(cwd, 'runs', 'short', 'results.csv'), 'utf8').trim().split('\n');
    const validated = rows[0]!.split(',').indexOf('validated');
    assert.deepEqual(rows.slice(1).map((row) => row.split(',')[validated]), ['False', 'True'], 'epoch 1 skipped, the final epoch validated');
  });
});

describe('newcomer: predict sources', { concurrency: 2 }, () => {
  const folder = join(cwd, 'mixed');
  const sample = join(REPO_ROOT, 'assets', 'sample.jpg');
  before(() => {
    mkdirSync(folder, { recursive: true });
    copyFileSync(sample, join(folder, 'a.jpg'));
    // A real (tiny) video file, made with Debian's ffmpeg.
    execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=5', '-t', '1', join(folder, 'clip.mp4')]);
  });

  it('several positional sources, and the original list form source=[a,b], predict each one', async () => {
    const two = await runCli(['predict', sample, join(folder, 'a.jpg')], cwd);
    assert.equal(two.code, 0, two.stderr);
    assert.match(two.stdout, /^image 1\/2 .*sample\.jpg: 640x360 circle: 2, /m);
    assert.match(two.stdout, /^image 2\/2 .*a\.jpg: 640x360 circle: 2, /m);
    const listed = await runCli(['predict', `source=[${sample}, ${join(folder, 'a.jpg')}]`, '--json'], cwd);
    assert.equal(listed.code, 0, listed.stderr);
    const out = JSON.parse(listed.stdout);
    assert.deepEqual(out.results.map((r: { path: string }) => r.path), [sample, join(folder, 'a.jpg')]);
    assert.ok(out.results.every((r: { detections: unknown[] }) => r.detections.length === 8));
  });

  it("per-image ms lines are shares of the run's time: with batch=3 or 1 they add up to at most the total less the model load", async () => {
    const six = join(cwd, 'six');
    mkdirSync(six, { recursive: true });
    for (let i = 1; i <= 6; i++) copyFileSync(sample, join(six, `s${i}.jpg`));
    for (const batch of [3, 1]) {
      const r = await runCli(['predict', `source=${six}`, `batch=${batch}`], cwd);
      assert.equal(r.code, 0, r.stderr);
      const lines = [...r.stdout.matchAll(/^image \d\/6 .*, (\d+\.\d)ms$/gm)].map((m) => Number(m[1]));
      assert.equal(lines.length, 6, r.stdout);
      const total = r.stdout.match(/^Speed: .*; 6 image\(s\) in (\d+\.\d\d)s \(model load (\d+\.\d)ms\)$/m);
      assert.ok(total, r.stdout);
      const runMs = Number(total[1]) * 1000 - Number(total[2]);
      const sum = lines.reduce((a, b) => a + b, 0);
      // Printed rounding: the total to 5 ms, each line and the load to 0.05 ms.
      assert.ok(sum > 0 && sum <= runMs + 5 + 0.05 * 7, `batch=${batch}: per-image lines add up to ${sum.toFixed(1)} ms, more than the run's ${runMs.toFixed(1)} ms without the load\n${r.stdout}`);
    }
  });

  it('a video on its own is read frame by frame; in a list it is refused (exit 3); inside a folder it is named once and the images are read', async () => {
    const video = await runCli(['predict', join(folder, 'clip.mp4')], cwd);
    assert.equal(video.code, 0, video.stderr);
    assert.match(video.stdout, /^5 frame\(s\) in /m);
    const listed = await runCli(['predict', sample, join(folder, 'clip.mp4')], cwd);
    assert.equal(listed.code, 3, listed.stderr);
    assert.match(listed.stderr, /^Error: .*clip\.mp4 is a video: a list holds images; predict a video on its own \(libreyolo predict .*clip\.mp4\) to read its frames\.$/m);
    const mixed = await runCli(['predict', folder], cwd);
    assert.equal(mixed.code, 0, mixed.stderr);
    assert.match(mixed.stdout, /^image 1\/1 .*a\.jpg: 640x360 /m);
    assert.equal(mixed.stderr.match(/video file/g)?.length, 1, mixed.stderr);
    assert.match(mixed.stderr, /Warning: 1 video file\(s\) in .*mixed \(.*clip\.mp4\) are not read: predict reads images here, not videos\./);
  });
});

describe('newcomer: train --help', () => {
  it('gives every option one line of meaning and the defaults of each family that differs', async () => {
    const r = await runCli(['train', '--help'], cwd);
    assert.equal(r.code, 0, r.stderr);
    const help = r.stdout.replace(/\n {20,}/g, ' ');
    assert.doesNotMatch(help, /training config field/);
    assert.match(help, /--no-aug-epochs <value> +last epochs trained without mosaic\/mixup \(close-mosaic\) \(default 15; D-FINE 4, DEIM 12\)/);
    assert.match(help, /--mosaic-prob <value> +probability of a 4-image mosaic per sample \(default 1; RF-DETR 0, D-FINE 0, DEIM 0\)/);
    assert.match(help, /--epochs <value> +number of training epochs \(default 300; RF-DETR 100, D-FINE 132, DEIM 132\)/);
    assert.match(help, /--eval-interval <value> +validate every N epochs \(and always on the final epoch\) \(default 10\)/);
  });
});
