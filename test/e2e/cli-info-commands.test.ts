/**
 * The small commands (version, checks, models, formats, cfg, info, metadata) as a user runs them:
 * the real CLI in a child process, each with its text and its --json line, plus the original's CLI
 * aliases (train mosaic/mixup, val workers, a leading `detect`).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { DEFAULT_MODEL_PATH } from '../../src/assets.ts';
import { LibreYOLO } from '../../src/load.ts';
import { familyImgsz, familySizeTask, listFamilies } from '../../src/models/index.ts';
import { TRAIN_DEFAULTS } from '../../src/train/config.ts';
import { VERSION } from '../../src/version.ts';
import { runCli } from '../helpers/cli.ts';

function jsonLine(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n');
  assert.equal(lines.length, 1, `one JSON line: ${stdout}`);
  const parsed = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.equal(Object.keys(parsed).at(-1), 'schema_version', 'schema_version comes last');
  assert.equal(parsed.schema_version, 1);
  return parsed;
}

describe('libreyolo version, checks, models, formats, cfg, info, metadata', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'libreyolo-info-'));
  after(() => rmSync(cwd, { recursive: true, force: true }));

  it('version: text and --json; a leading detect is dropped', async () => {
    const text = await runCli(['detect', 'version'], cwd);
    assert.equal(text.code, 0, text.stderr);
    const vips = (sharp.versions as Record<string, string>).vips!;
    assert.equal(text.stdout, `libreyolo ${VERSION}\nNode ${process.versions.node}, onnxruntime-node ${ort.env.versions.node}, sharp ${sharp.versions.sharp} (libvips ${vips})\n`);
    const j = jsonLine((await runCli(['version', '--json'], cwd)).stdout);
    assert.deepEqual(j, { version: VERSION, node: process.versions.node, onnxruntime: ort.env.versions.node, sharp: sharp.versions.sharp, libvips: vips, schema_version: 1 });
  });

  it('checks: every ORT execution provider with availability and a reason; packages from package.json', async () => {
    const r = await runCli(['checks', '--json'], cwd);
    assert.equal(r.code, 0, r.stderr);
    const j = jsonLine(r.stdout);
    const providers = j.execution_providers as Array<{ name: string; available: boolean; why: string }>;
    assert.deepEqual(providers.map((p) => p.name), ort.listSupportedBackends().map((b) => b.name));
    assert.equal(providers.find((p) => p.name === 'cpu')?.available, true);
    for (const p of providers) assert.ok(p.why.length > 10, `a reason for ${p.name}`);
    assert.ok(Array.isArray(j.gpu));
    assert.equal((j.packages as Record<string, string>)['onnxruntime-node'], ort.env.versions.node);
    assert.equal((j.packages as Record<string, string>).sharp, sharp.versions.sharp);
    const text = await runCli(['checks'], cwd);
    assert.equal(text.code, 0);
    assert.match(text.stdout, new RegExp(`^Node: +${process.versions.node.replace(/\./g, '\\.')}`));
    assert.match(text.stdout, /\nExecution providers:\n {2}cpu: available \(device=cpu\)/);
    assert.match(text.stdout, /\nPackages:\n {2}@bufbuild\/protobuf: \d/);
    // ffmpeg is installed on this machine (Debian package), so its version is reported, not 'not found'.
    assert.match(text.stdout, /\nffmpeg: +\d/);
  });

  it('models: every registered family, size and input size', async () => {
    const j = jsonLine((await runCli(['models', '--json'], cwd)).stdout);
    const families = j.families as Array<{ name: string; sizes: string[]; default_imgsz: Record<string, number>; cli_names: string[] }>;
    assert.deepEqual(families.map((f) => f.name), listFamilies().map((f) => f.name));
    for (const f of listFamilies()) {
      const got = families.find((x) => x.name === f.name)!;
      assert.deepEqual(got.sizes, [...f.sizes]);
      for (const s of f.sizes) assert.equal(got.default_imgsz[s], familyImgsz(f, s, familySizeTask(f, s)));
      assert.deepEqual(got.cli_names, f.sizes.map((s) => `${f.name}-${s}`));
    }
    const text = await runCli(['models'], cwd);
    assert.match(text.stdout, /^Available models:\n\n {2}yolo9 \(YOLOv9, trainable\):\n {4}Sizes: +t, s, m, c\n/);
    assert.match(text.stdout, /\n {4}Input: +n=416, t=416, s=640, m=640, l=640, x=640\n/);
    // RF-DETR's segment-only sizes show the segment input.
    assert.match(text.stdout, /\n {4}Input: +n=384, s=512, m=576, l=704, x=624, xx=768\n/);
  });

  it('formats: text and --json', async () => {
    const text = await runCli(['formats'], cwd);
    assert.equal(text.stdout, 'Supported export formats:\n\n  onnx\n    Extension: .onnx, FP16: True, INT8: False\n');
    const j = jsonLine((await runCli(['formats', '--json'], cwd)).stdout);
    assert.deepEqual(j.formats, [{ name: 'onnx', extension: '.onnx', int8: false, fp16: true, requires_onnx: false }]);
  });

  it('cfg: train defaults under the short names, val and predict defaults from their commands', async () => {
    const j = jsonLine((await runCli(['cfg', '--json'], cwd)).stdout);
    const train = j.train_defaults as Record<string, unknown>;
    assert.equal(train.mosaic, TRAIN_DEFAULTS.mosaic_prob);
    assert.equal(train.mixup, TRAIN_DEFAULTS.mixup_prob);
    assert.ok(!('mosaic_prob' in train) && !('device' in train) && !('data_dir' in train));
    assert.deepEqual(train.mosaic_scale, [0.5, 1.5]);
    assert.deepEqual(j.val_defaults, { split: 'val', imgsz: null, batch: 16, conf: 0.001, iou: 0.6, max_det: 300 });
    const predict = j.predict_defaults as Record<string, unknown>;
    assert.deepEqual([predict.conf, predict.iou, predict.batch, predict.imgsz], [0.25, 0.45, 1, null]);
    assert.deepEqual(Object.keys(j.family_overrides as object), listFamilies().filter((f) => f.train).map((f) => f.name));
    const text = await runCli(['cfg'], cwd);
    assert.match(text.stdout, /^train_defaults:\n {2}epochs: 300\n/);
    assert.match(text.stdout, /\n {2}mosaic: 1\n {2}mixup: 0\n/);
    assert.match(text.stdout, /\nval_defaults:\n {2}split: val\n/);
  });

  it('info: the bundled model, text and --json; an unknown name exits 4', async () => {
    const model = await LibreYOLO();
    const params = model.parameterCount();
    await model.close();
    const text = await runCli(['info'], cwd);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stderr, /^Loading LibreYOLO9t-shapes\.pt\.\.\.\n$/);
    assert.match(text.stdout, new RegExp(`^Model: +LibreYOLO9t-shapes\\.pt\\nFamily: +yolo9\\nSize: +t\\nTask: +detect\\nClasses: +6\\nParameters: +${params.toLocaleString('en-US')}\\n`));
    assert.match(text.stdout, /\nInput size: 160x160\nDevice: +cpu\n/);
    const r = await runCli(['info', '--json', '--detailed'], cwd);
    assert.equal(r.stderr, '', 'no progress line with --json');
    const j = jsonLine(r.stdout);
    assert.equal(j.parameters, params);
    assert.equal(j.trainable_parameters, params);
    assert.deepEqual(j.input_size, [160, 160]);
    assert.deepEqual(j.class_names, { 0: 'circle', 1: 'square', 2: 'triangle', 3: 'star', 4: 'ellipse', 5: 'rectangle' });
    const details = j.details as Array<{ params: number }>;
    assert.equal(details.reduce((a, d) => a + d.params, 0), params);
    const bad = await runCli(['info', '--model', 'yolo9-zz.pt', '--json'], cwd);
    assert.equal(bad.code, 4);
    assert.equal((JSON.parse(bad.stdout) as { error: string }).error, 'model_not_found');
  });

  describe('metadata', () => {
    let onnxPath = '';
    before(async () => {
      onnxPath = join(cwd, 'shapes.onnx');
      const r = await runCli(['export', '--output-path', onnxPath], cwd);
      assert.equal(r.code, 0, r.stderr);
    });

    it('an export: valid, required keys first, graph IO', async () => {
      const text = await runCli(['metadata', '--path', onnxPath], cwd);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, new RegExp(`^Checkpoint: ${onnxPath.replace(/[.]/g, '\\.')}\\nFormat: onnx\\nValid LibreYOLO metadata: yes\\nMetadata:\\n {2}schema_version: 1\\.0\\n {2}libreyolo_version: ${VERSION.replace(/\./g, '\\.')}\\n {2}model_family: yolo9\\n`));
      const j = jsonLine((await runCli(['metadata', onnxPath, '--json'], cwd)).stdout);
      assert.equal(j.valid, true);
      assert.deepEqual(j.errors, []);
      assert.deepEqual((j.metadata as Record<string, unknown>).names, { 0: 'circle', 1: 'square', 2: 'triangle', 3: 'star', 4: 'ellipse', 5: 'rectangle' });
      assert.deepEqual((j.contents as { inputs: unknown }).inputs, [{ name: 'images', dtype: 'float32', shape: [1, 3, 160, 160] }]);
    });

    it('the bundled checkpoint: read, but without schema_version and libreyolo_version it is not valid (exit 1)', async () => {
      const r = await runCli(['metadata', `path=${DEFAULT_MODEL_PATH}`, '--json'], cwd);
      assert.equal(r.code, 1, r.stderr);
      const j = jsonLine(r.stdout);
      assert.equal(j.valid, false);
      assert.deepEqual(j.errors, ["missing required key 'schema_version'", "missing required key 'libreyolo_version'"]);
      assert.equal((j.metadata as Record<string, unknown>).nc, 6);
      assert.equal((j.contents as Record<string, unknown>).tensors, 1338);
      const text = await runCli(['metadata', DEFAULT_MODEL_PATH], cwd);
      assert.match(text.stdout, /\nValid LibreYOLO metadata: no\n/);
      assert.match(text.stdout, /\nErrors:\n {2}- missing required key 'schema_version'\n/);
    });

    it('a missing path is a clear error (exit 4), no path a usage error (exit 2)', async () => {
      const r = await runCli(['metadata', '--path', 'nope.pt'], cwd);
      assert.equal(r.code, 4);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, 'Error: Checkpoint not found: nope.pt. Pass the path of a .pt, .safetensors or exported .onnx file.\n');
      assert.equal((await runCli(['metadata'], cwd)).code, 2);
    });
  });

  it("aliases: train mosaic/mixup set mosaic_prob/mixup_prob; val workers is refused, not ignored", async () => {
    const mixup = await runCli(['train', 'mixup=x'], cwd);
    assert.equal(mixup.code, 2);
    assert.match(mixup.stderr, /mixup_prob must be a number, got "x"/);
    const mosaic = await runCli(['train', '--mosaic=oops'], cwd);
    assert.match(mosaic.stderr, /mosaic_prob must be a number, got "oops"/);
    const workers = await runCli(['val', 'workers=2', 'data=coco8'], cwd);
    assert.equal(workers.code, 2);
    assert.match(workers.stderr, /val: workers=2 is not supported/);
  });
});
