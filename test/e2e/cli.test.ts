/**
 * The `libreyolo` command: end to end in a real process (temp cwd) where the point is the process
 * (exit codes, files written, stdout), in-process for parsing rules and help.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { Command } from 'commander';
import { SAMPLE_IMAGE, SAMPLE_LARGE_IMAGE } from '../../src/assets.ts';
import { loadImageFile } from '../../src/data/image.ts';
import { predictCommand } from '../../src/cli/commands/predict.ts';
import { rewriteKeyValueArgs } from '../../src/cli/keyvalue.ts';
import { buildProgram, main } from '../../src/cli/main.ts';
import { summarizeModel } from '../../src/graph/onnx.ts';
import { LibreYOLO } from '../../src/load.ts';
import type { Results } from '../../src/predict/results.ts';
import { runCli } from '../helpers/cli.ts';
import { fixture } from '../helpers/fixtures.ts';

const REF_PT = fixture('yolo9t_ref.pt');
const root = mkdtempSync(join(tmpdir(), 'libreyolo-cli-'));
const fresh = (name: string) => mkdtempSync(join(root, `${name}-`));
after(() => rmSync(root, { recursive: true, force: true }));

/** Runs main() in this process with stdout/stderr captured (help and usage errors never load a model). */
async function mainCaptured(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = { stdout: '', stderr: '' };
  const [w1, w2] = [process.stdout.write, process.stderr.write];
  process.stdout.write = ((s: string | Uint8Array) => ((out.stdout += String(s)), true)) as typeof process.stdout.write;
  process.stderr.write = ((s: string | Uint8Array) => ((out.stderr += String(s)), true)) as typeof process.stderr.write;
  try {
    return { code: await main(argv), ...out };
  } finally {
    process.stdout.write = w1;
    process.stderr.write = w2;
  }
}

/** Parses `args` as the real predict command would, without running it. */
function parsePredict(args: string[]): Record<string, unknown> {
  const cmd = predictCommand();
  const { operands, unknown } = cmd.parseOptions(rewriteKeyValueArgs(args, cmd));
  return { ...cmd.opts(), operands, unknown };
}

describe('libreyolo predict (real process)', { concurrency: 2 }, () => {
  test('save=true writes the annotated image to runs/detect/predict, then predict2', async () => {
    const cwd = fresh('save');
    // The reference weights are random: only a very low threshold gives boxes to draw.
    const args = ['predict', `model=${REF_PT}`, `source=${SAMPLE_IMAGE}`, 'save=true', 'conf=0.0001', 'max_det=3'];
    const first = await runCli(args, cwd);
    assert.equal(first.code, 0, first.stderr);
    const saved = join(cwd, 'runs', 'detect', 'predict', 'sample.jpg');
    assert.match(first.stdout, /^image 1\/1 .*sample\.jpg: 640x360 class\d+: \d+(, class\d+: \d+)*, [\d.]+ms$/m);
    assert.match(first.stdout, /^Speed: [\d.]+ms preprocess, [\d.]+ms inference, [\d.]+ms postprocess per image/m);
    assert.ok(first.stdout.includes(`Results saved to ${saved}`), first.stdout);
    const [annotated, original] = [await loadImageFile(saved), await loadImageFile(SAMPLE_IMAGE)];
    assert.deepEqual([annotated.width, annotated.height], [640, 360]);
    let changed = 0;
    for (let i = 0; i < original.data.length; i += 3) if (Math.abs(annotated.data[i]! - original.data[i]!) > 60) changed++;
    assert.ok(changed > 1000, `boxes and labels are drawn (${changed} pixels changed)`);

    const second = await runCli(args, cwd);
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(readdirSync(join(cwd, 'runs', 'detect')).sort(), ['predict', 'predict2']);
    assert.ok(existsSync(join(cwd, 'runs', 'detect', 'predict2', 'sample.jpg')));
  });

  test('--json prints one object: schema 1, detections with class, class_id, confidence, bbox_xyxy', async () => {
    const cwd = fresh('json');
    const r = await runCli(['predict', `model=${REF_PT}`, SAMPLE_IMAGE, '--json', 'conf=0.0001', 'max_det=5', 'imgsz=480x640', 'classes=[0,2]'], cwd);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 1, 'stdout carries the JSON object only');
    const out = JSON.parse(lines[0]!);
    assert.equal(out.schema_version, 1);
    assert.equal(out.model_family, 'yolo9');
    assert.deepEqual(out.image_size, [480, 640]);
    assert.equal(out.device, 'cpu');
    assert.equal(out.results.length, 1);
    const [res] = out.results;
    assert.deepEqual(res.original_shape, [360, 640]);
    assert.ok(res.detections.length >= 1 && res.detections.length <= 5, `max_det=5 caps the detections (${res.detections.length})`);
    for (const d of res.detections) {
      assert.deepEqual(Object.keys(d).sort(), ['bbox_xyxy', 'class', 'class_id', 'confidence']);
      assert.ok(d.class_id === 0 || d.class_id === 2, 'classes=[0,2] filters');
      assert.equal(d.class, `class${d.class_id}`);
      assert.equal(d.confidence, Math.round(d.confidence * 1e4) / 1e4, '4 decimals');
      assert.equal(d.bbox_xyxy.length, 4);
      for (const v of d.bbox_xyxy) assert.equal(v, Math.round(v * 10) / 10, '1 decimal');
    }
    assert.equal(existsSync(join(cwd, 'runs')), false, 'nothing saved without save=true');
  });

  test('tile merge keys reach predict: GREEDYNMM + IOS + class_agnostic gives 48 boxes on the 48-shape sample, the default more', async () => {
    const cwd = fresh('merge');
    const base = ['predict', SAMPLE_LARGE_IMAGE, '--json', 'tiling=true'];
    const [plain, merged] = await Promise.all([
      runCli(base, cwd), runCli([...base, 'postprocess_type=greedynmm', 'match_metric=IOS', 'class_agnostic=true'], cwd),
    ]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(merged.code, 0, merged.stderr);
    const count = (r: { stdout: string }): number => JSON.parse(r.stdout).results[0].detections.length;
    assert.equal(count(merged), 48);
    assert.ok(count(plain) > 48, `default merge keeps partial boxes (${count(plain)})`);
    const refused = await runCli(['predict', SAMPLE_LARGE_IMAGE, 'match_metric=IOS'], cwd);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /match_metric applies to tiled inference only: add tiling=true or remove it\./);
  });

  test('export format=onnx dynamic=true output_path=... writes a file that reloads with free batch, height and width', async () => {
    const cwd = fresh('export');
    const weights = join(cwd, 'ref.pt');
    copyFileSync(REF_PT, weights);
    const target = join(cwd, 'out', 'ref-dynamic.onnx');
    const r = await runCli(['export', 'model=ref.pt', 'format=onnx', 'dynamic=true', `output_path=${target}`], cwd);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`Exported yolo9-t to ${target.replace(/[.\\]/g, '\\$&')}`));
    const summary = summarizeModel(new Uint8Array(readFileSync(target)));
    assert.equal(summary.inputs[0]!.name, 'images');
    assert.equal(summary.inputs[0]!.shape.filter((d) => typeof d === 'string').length, 3, `free batch, height, width: ${summary.inputs[0]!.shape}`);
    assert.equal(summary.metadata.get('model_family'), 'yolo9');
    const model = await LibreYOLO(target);
    try {
      assert.equal(model.format, 'onnx');
      assert.equal(model.nc, 80);
      const res = (await model.predict(SAMPLE_IMAGE, { imgsz: 320, conf: 0.0001, max_det: 3 })) as Results;
      assert.equal(res.length, 3, 'a size other than the default runs on the dynamic file');
    } finally {
      await model.close();
    }
  });

  test('an unknown command and an unknown option exit 2', async () => {
    const cwd = fresh('usage');
    const cmd = await runCli(['frobnicate'], cwd);
    assert.equal(cmd.code, 2);
    assert.match(cmd.stderr, /^Error: unknown command 'frobnicate'\. Run 'libreyolo --help' for valid commands\.$/m);
    const opt = await runCli(['predict', `model=${REF_PT}`, 'bogus=1', '--json'], cwd);
    assert.equal(opt.code, 2);
    assert.deepEqual(JSON.parse(opt.stdout), {
      schema_version: 1, error: 'config_unknown_key',
      message: "unknown option 'bogus' (bogus=1). Run 'libreyolo predict --help' for valid options.",
      suggestion: "Run 'libreyolo predict --help' for valid options.",
    });
    assert.equal(opt.stderr, '', 'with --json the error is on stdout only');
  });
});

describe('key=value parsing', () => {
  test('booleans take true/false/1/0 (any case) or a bare name', () => {
    for (const [arg, save] of [['save=true', true], ['save=TRUE', true], ['save=1', true], ['save', true], ['save=false', false], ['save=0', false]] as const) {
      assert.equal(parsePredict([arg]).save, save, arg);
    }
    assert.equal(parsePredict([]).save, undefined); // absent: the library's default (false) applies
    // A flag without a negative form is simply left out when false.
    assert.equal(parsePredict(['half=0']).half, false);
    assert.equal(parsePredict(['half=1']).half, true);
  });

  test('keys map to flags; numbers, sizes and lists are parsed', () => {
    const o = parsePredict(['max_det=5', 'imgsz=480x640', 'classes=[0,2]', 'conf=0.4', 'img.jpg']);
    assert.equal(o.maxDet, 5);
    assert.deepEqual(o.imgsz, [480, 640]);
    assert.deepEqual(o.classes, [0, 2]);
    assert.equal(o.conf, 0.4);
    assert.deepEqual(o.operands, ['img.jpg']);
    assert.deepEqual(parsePredict(['imgsz=640']).imgsz, 640);
    assert.deepEqual(parsePredict(['imgsz=480X640']).imgsz, [480, 640]);
    assert.deepEqual(parsePredict(['classes=3']).classes, [3]);
    assert.deepEqual(parsePredict(['classes=0,2']).classes, [0, 2]);
    // POSIX spelling works too, and the token after a value-taking flag is never rewritten.
    assert.equal(parsePredict(['--max-det', '7']).maxDet, 7);
    assert.deepEqual(rewriteKeyValueArgs(['--output-path', 'save=1', 'save'], predictCommand()), ['--output-path', 'save=1', '--save']);
  });

  test('bad values are usage errors (exit 2) naming the key', async () => {
    for (const [arg, message] of [
      ['imgsz=big', /^Error: imgsz must be a positive integer or an \[height, width\] pair of positive integers \(on the command line: 640, 480x640 or \[480,640\]\), got "big"$/m],
      ['classes=[a]', /^Error: classes must be integer class IDs \(a number or a list of numbers\), got "\[a\]"$/m],
      ['max_det=2.5', /^Error: max_det must be an integer, got 2\.5$/m],
      ['batch=0', /^Error: batch must be >= 1, got 0$/m],
      ['save=yes', /^Error: save must be true or false, got "yes"$/m],
      // A value-taking key alone is not a source named 'conf'.
      ['conf', /^Error: conf needs a value: use conf=<value>\. Run 'libreyolo predict --help' for what it takes\.$/m],
      ['max_det', /^Error: max_det needs a value: use max_det=<value>\./m],
    ] as const) {
      const r = await mainCaptured(['predict', 'model=never-loaded.pt', arg]);
      assert.equal(r.code, 2, arg);
      assert.match(r.stderr, message);
    }
  });
});

describe('--help', () => {
  /** Every command path: predict, export, data synth, ... */
  function commandPaths(cmd: Command, prefix: string[] = []): string[][] {
    return cmd.commands.filter((c) => c.name() !== 'help').flatMap((c) => [[...prefix, c.name()], ...commandPaths(c, [...prefix, c.name()])]);
  }

  test('every command prints its help and exits 0', async () => {
    const paths = commandPaths(buildProgram());
    assert.ok(paths.length >= 2, 'predict and export at least');
    for (const path of [[], ...paths]) {
      const r = await mainCaptured([...path, '--help']);
      assert.equal(r.code, 0, path.join(' '));
      assert.match(r.stdout, new RegExp(`^Usage: libreyolo${path.map((p) => ` ${p}`).join('')} `, 'm'), path.join(' '));
      assert.equal(r.stderr, '');
    }
    const detect = await mainCaptured(['detect', 'predict', '--help']);
    assert.equal(detect.code, 0);
    assert.match(detect.stdout, /^Usage: libreyolo predict /m);
  });
});
