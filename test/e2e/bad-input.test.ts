/**
 * Every bad input of issue 2 gives a clear message and the original's exit code (predict.md 10.2):
 * through the real `libreyolo` process (temp cwd) and, where cheap, through the API as well.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { zipSync } from 'fflate';
import sharp from 'sharp';
import { SAMPLE_IMAGE } from '../../src/assets.ts';
import { LibreYOLOError } from '../../src/errors.ts';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { LibreYOLO } from '../../src/load.ts';
import { listFamilies } from '../../src/models/registry.ts';
import type { LibreYOLOModel } from '../../src/model.ts';
import type { PredictOptions } from '../../src/predict/options.ts';
import type { Results } from '../../src/predict/results.ts';
import { saveCheckpointPt } from '../../src/weights/checkpoint.ts';
import { closedPort, runCli, type CliRun } from '../helpers/cli.ts';
import { fixture } from '../helpers/fixtures.ts';

const REF_PT = fixture('yolo9t_ref.pt');
const REF_ONNX = fixture('yolo9t_ref.onnx');
const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bad-'));
const at = (name: string) => join(dir, name);
let model: LibreYOLOModel;

const f32 = (dims: number[]): HostTensor => ({ dtype: 'float32', dims, data: new Float32Array(dims.reduce((a, b) => a * b, 1)) });

/** An ONNX model: images [1,3,64,64] -> `outputShape`, through `emit`. */
function onnxModel(emit: (b: GraphBuilder, x: string) => string, outputName: string, outputShape: (number | string)[]): Uint8Array {
  const b = new GraphBuilder('not_a_detector');
  const x = b.input('images', 'float32', [1, 3, 64, 64]);
  b.output(outputName, emit(b, x), 'float32', outputShape);
  return serializeModel(b.graph);
}

before(async () => {
  mkdirSync(at('empty'));
  writeFileSync(join(at('empty'), 'readme.txt'), 'no images here');
  writeFileSync(at('notes.txt'), 'just text');
  writeFileSync(at('fake.jpg'), 'not really a jpeg');
  const jpg = readFileSync(SAMPLE_IMAGE);
  writeFileSync(at('trunc.jpg'), jpg.subarray(0, jpg.length >> 1));
  const png = await sharp(jpg).png().toBuffer();
  writeFileSync(at('trunc.png'), png.subarray(0, png.length >> 1));
  const pt = readFileSync(REF_PT);
  writeFileSync(at('trunc.pt'), pt.subarray(0, pt.length >> 1));
  await saveCheckpointPt(at('nofamily.pt'), new Map([['encoder.layer0.weight', f32([4, 4])]]));
  // yolo9 key names, but a stem width (24) that no size has.
  await saveCheckpointPt(at('nosize.pt'), new Map([
    ['backbone.conv0.conv.weight', f32([24, 3, 3, 3])], ['backbone.elan1.cv1.conv.weight', f32([8, 24, 1, 1])],
  ]));
  // A torch zip whose pickle would run os.system('touch pwned') on a naive loader (protocol 2:
  // GLOBAL 'os system', BINUNICODE 'touch pwned', TUPLE1, REDUCE, STOP).
  const arg = Buffer.from('touch pwned');
  const len = [arg.length, 0, 0, 0];
  const evil = Uint8Array.from([0x80, 0x02, 0x63, ...Buffer.from('os\nsystem\n'), 0x58, ...len, ...arg, 0x85, 0x52, 0x2e]);
  writeFileSync(at('evil.pt'), zipSync({ 'archive/data.pkl': evil, 'archive/version': Buffer.from('3\n') }, { level: 0 }));
  writeFileSync(at('classifier.onnx'), onnxModel((b, x) => b.op('Flatten', [b.op('GlobalAveragePool', [x])]), 'logits', [1, 3]));
  // Rank 3 with symbolic dims, like a torch export: only running it shows it is no detector.
  writeFileSync(at('flat.onnx'), onnxModel(
    (b, x) => b.op('Reshape', [x, b.constant('shape', { dtype: 'int64', dims: [3], data: BigInt64Array.of(1n, 3n, -1n) })]),
    'output', [1, 'c', 'n']));
  model = await LibreYOLO(REF_PT);
});

after(async () => {
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Exit code, message lines on stderr, nothing on stdout, no stack trace. */
function expectCli(r: CliRun, exitCode: number, ...patterns: RegExp[]): void {
  assert.equal(r.code, exitCode, `exit code (stderr: ${r.stderr})`);
  assert.match(r.stderr, /^Error: /m);
  for (const p of patterns) assert.match(r.stderr, p);
  assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
  assert.equal(r.stdout, '');
}

function expectError(code: string, exitCode: number, ...patterns: RegExp[]) {
  return (e: unknown): true => {
    assert.ok(e instanceof LibreYOLOError, `expected a LibreYOLOError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.exitCode, exitCode);
    for (const p of patterns) assert.match(e.message, p);
    return true;
  };
}

/** Each case spawns a process that mostly waits on startup: overlap a few. */
const SPAWNS = 4;

const occurrences = (s: string, part: string): number => s.split(part).length - 1;
const predictCli = (...args: string[]) => runCli(['predict', `model=${REF_PT}`, ...args], dir);

describe('bad input', { concurrency: SPAWNS }, () => {
  describe('bad sources (exit 3)', { concurrency: SPAWNS }, () => {
    test('a missing source file', async () => {
      expectCli(await predictCli('source=missing.jpg'), 3,
        /^Error: Source not found: missing\.jpg$/m, /^Nothing exists at .*missing\.jpg\. Pass an existing image file, a folder of images, or an http\(s\) URL\.$/m);
      await assert.rejects(model.predict(at('missing.jpg')), expectError('source_not_found', 3, /^Source not found: .*missing\.jpg$/));
    });

    test('a folder with no images', async () => {
      expectCli(await predictCli('source=empty'), 3, /^Error: No images found in empty \(searched recursively for \.jpg .*\)\. Add images to the folder or pass another source\.$/m);
      await assert.rejects(model.predict(at('empty')), expectError('data_images_missing', 3, /No images found in .*empty/));
    });

    test('a file that is not an image', async () => {
      expectCli(await predictCli('source=notes.txt'), 3,
        /^Error: Cannot read the source image: notes\.txt: the file is corrupt, truncated or not an image \(.+\)\. Re-save or re-download it, or leave it out of the source\.$/m);
      await assert.rejects(model.predict(at('fake.jpg')), expectError('data_invalid', 3, /fake\.jpg: the file is corrupt, truncated or not an image/));
    });

    for (const ext of ['jpg', 'png']) {
      test(`a truncated ${ext.toUpperCase()}`, async () => {
        expectCli(await predictCli(`source=trunc.${ext}`), 3, new RegExp(`^Error: Cannot read the source image: trunc\\.${ext}: the file is corrupt, truncated or not an image`, 'm'));
        await assert.rejects(model.predict(at(`trunc.${ext}`)), expectError('data_invalid', 3, /corrupt, truncated/));
      });
    }
  });

  describe('bad weights (exit 4)', { concurrency: SPAWNS }, () => {
    test('a truncated .pt', async () => {
      expectCli(await runCli(['predict', 'model=trunc.pt'], dir), 4,
        /^Error: Cannot load .*trunc\.pt: the file is truncated or is not a PyTorch zip checkpoint\. Re-download it, or re-save it with torch\.save\.$/m);
      await assert.rejects(LibreYOLO(at('trunc.pt')), expectError('model_load_failed', 4, /truncated/));
    });

    test('a .pt whose keys match no family', async () => {
      const r = await runCli(['predict', 'model=nofamily.pt'], dir);
      const families = listFamilies().map((f) => f.name).join(', ');
      expectCli(r, 4, new RegExp(`^Error: Cannot load .*nofamily\\.pt: its weights match no supported model family \\(${families}\\); its keys start encoder\\.layer0\\.weight\\. Pass a LibreYOLO checkpoint`, 'm'));
      assert.equal(occurrences(r.stderr, 'Pass a LibreYOLO checkpoint'), 1, 'advice reads once');
      await assert.rejects(LibreYOLO(at('nofamily.pt')), expectError('model_load_failed', 4, /no supported model family/));
    });

    test('a .pt whose keys match no size', async () => {
      expectCli(await runCli(['predict', 'model=nosize.pt'], dir), 4,
        /^Error: Cannot load .*nosize\.pt: it looks like a yolo9 checkpoint, but its layer widths match none of the sizes t, s, m, c\. Re-download the weights/m);
      // Naming a size does not make it fit: the network says what is missing.
      await assert.rejects(LibreYOLO(at('nosize.pt'), { size: 't' }),
        expectError('model_load_failed', 4, /^Cannot load .*nosize\.pt as yolo9-t: .*detection head.*Re-download the weights/));
    });

    test('a pickle that references an arbitrary global (os.system)', async () => {
      const r = await runCli(['predict', 'model=evil.pt'], dir);
      expectCli(r, 4, /^Error: Refused to load .*evil\.pt: it references the Python global 'os\.system'\. Only tensors and plain containers/m);
      assert.equal(occurrences(r.stderr, 're-save it in Python'), 1, 'advice reads once');
      assert.deepEqual(readdirSync(dir).filter((f) => f === 'pwned'), []);
      await assert.rejects(LibreYOLO(at('evil.pt')), expectError('unsafe_checkpoint', 4, /os\.system/));
    });

    test('an .onnx without LibreYOLO metadata loads when its layout is a detector\'s', async () => {
      const warnings: string[] = [];
      const onnx = await LibreYOLO(REF_ONNX, { warn: (m) => warnings.push(m) });
      try {
        assert.equal(onnx.nc, 80);
        assert.deepEqual(onnx.imgsz, [640, 640]);
        assert.match(warnings.join('\n'), /yolo9t_ref\.onnx has no LibreYOLO metadata; assuming a yolo9-style detector with 80 classes \(the COCO names\)/);
        // 80 classes and no names: the COCO names, the original's default for an 80-class model.
        assert.deepEqual([onnx.names[0], onnx.names[79]], ['person', 'toothbrush']);
        // Same weights as the .pt: same boxes.
        const opts = { conf: 0.0001, max_det: 5 };
        const [a, b] = [await onnx.predict(SAMPLE_IMAGE, opts), await model.predict(SAMPLE_IMAGE, opts)] as Results[];
        assert.equal(a!.length, 5);
        assert.deepEqual([...a!.boxes.clsData], [...b!.boxes.clsData]);
        for (let i = 0; i < 20; i++) assert.ok(Math.abs(a!.boxes.xyxyData[i]! - b!.boxes.xyxyData[i]!) < 1e-2, `box coordinate ${i}`);
      } finally {
        await onnx.close();
      }
    });

    test('an .onnx whose layout is not a detector\'s', async () => {
      expectCli(await runCli(['predict', 'model=classifier.onnx'], dir), 4,
        /^Error: .*classifier\.onnx has no LibreYOLO metadata and its layout is not a detector's: input images \[1,3,64,64\], output logits \[1,3\]\. Expected input \[B,3,H,W\] and output \[B,4\+nc,anchors\]/m,
        /Export the detector with 'libreyolo export model=<weights> format=onnx'/);
      await assert.rejects(LibreYOLO(at('flat.onnx')),
        expectError('model_load_failed', 4, /a blank 1x3x64x64 input gives output \[1,3,4096\], expected \[1,4\+nc,84\]/));
    });
  });

  describe('bad predict options (exit 2)', { concurrency: SPAWNS }, () => {
    test('conf / iou outside [0, 1] or NaN', async () => {
      expectCli(await predictCli('conf=1.5'), 2, /^Error: conf must be in \[0, 1\], got 1\.5$/m);
      expectCli(await predictCli('iou=nan'), 2, /^Error: iou must be a number, got "nan"$/m);
      for (const [key, v] of [['conf', Number.NaN], ['conf', 1.5], ['iou', -0.1], ['iou', Infinity]] as const) {
        await assert.rejects(model.predict(SAMPLE_IMAGE, { [key]: v }),
          expectError('config_range_error', 2, new RegExp(`^${key} must be in \\[0, 1\\], got ${v}$`)));
      }
    });

    test('max_det < 0, one rule on the CLI and in the API', async () => {
      expectCli(await predictCli('max_det=-1'), 2, /^Error: max_det must be >= 0, got -1$/m);
      await assert.rejects(model.predict(SAMPLE_IMAGE, { max_det: -1 }), expectError('config_range_error', 2, /^max_det must be >= 0, got -1$/));
    });

    test('vid_stride and stream_buffer on an image: the defaults pass, anything else is refused (they shape videos and live streams)', async () => {
      const plain = await model.predict(SAMPLE_IMAGE, { conf: 0.0001, max_det: 5 }) as Results;
      const same = await model.predict(SAMPLE_IMAGE, { conf: 0.0001, max_det: 5, vid_stride: 1, stream_buffer: false }) as Results;
      assert.equal(plain.length, 5);
      assert.deepEqual(same.boxes.data, plain.boxes.data);
      await assert.rejects(model.predict(SAMPLE_IMAGE, { vid_stride: 2 }),
        expectError('config_conflict', 2, /^vid_stride=2 keeps every 2nd frame of a video or live stream, but .* is not one.*Remove vid_stride/));
      await assert.rejects(model.predict(SAMPLE_IMAGE, { vid_stride: 0 }), expectError('config_range_error', 2, /^vid_stride must be >= 1, got 0$/));
      await assert.rejects(model.predict(SAMPLE_IMAGE, { vid_stride: 1.5 }), expectError('config_type_error', 2, /^vid_stride must be an integer, got 1\.5$/));
      await assert.rejects(model.predict(SAMPLE_IMAGE, { stream_buffer: true }),
        expectError('config_conflict', 2, /^stream_buffer=true queues the frames of a live stream, but .* is not one.*Remove stream_buffer/));
      await assert.rejects(model.predict(SAMPLE_IMAGE, { stream_buffer: 'yes' as unknown as boolean }), expectError('config_type_error', 2, /^stream_buffer must be true or false, got "yes"$/));
    });

    test('unknown predict options', async () => {
      expectCli(await predictCli('bogus=1'), 2, /^Error: unknown option 'bogus' \(bogus=1\)\. Run 'libreyolo predict --help' for valid options\.$/m);
      const bogus: Record<string, unknown> = { bogus: 1 };
      await assert.rejects(model.predict(SAMPLE_IMAGE, bogus as PredictOptions),
        expectError('config_unknown_key', 2, /^Unsupported predict option\(s\): bogus\. Supported options include conf, iou/));
    });
  });

  describe('the hub', { concurrency: SPAWNS }, () => {
    test('unreachable (exit 1): the message names the URL and how to supply the file, once', async () => {
      const endpoint = `http://127.0.0.1:${await closedPort()}`;
      const cwd = mkdtempSync(join(dir, 'hub-'));
      const r = await runCli(['predict', 'model=LibreYOLO9t.pt'], cwd, { HF_ENDPOINT: endpoint, HF_HUB_OFFLINE: undefined });
      const target = join(cwd, 'weights', 'LibreYOLO9t.pt');
      expectCli(r, 1, new RegExp(`^Error: Failed to download ${endpoint}/LibreYOLO/LibreYOLO9t/resolve/main/LibreYOLO9t\\.pt to ${target.replace(/[.\\]/g, '\\$&')}: .*ECONNREFUSED`, 'm'));
      assert.equal(occurrences(r.stderr, `place it at ${target}`), 1, r.stderr);
      assert.equal(occurrences(r.stderr, 'HF_ENDPOINT'), 1, r.stderr);
      assert.deepEqual(existsSync(join(cwd, 'weights')) ? readdirSync(join(cwd, 'weights')) : [], [], 'no partial file left');
      await assert.rejects(LibreYOLO('LibreYOLO9s', { cwd, env: { HF_ENDPOINT: endpoint }, progress: false }),
        expectError('download_failed', 1, new RegExp(`${endpoint}/LibreYOLO/LibreYOLO9s/resolve/main/LibreYOLO9s\\.pt`), /place it at .*LibreYOLO9s\.pt/));
    });

    test('HF_HUB_OFFLINE=1 (exit 4): nothing is fetched, and the message says how to supply the file', async () => {
      const cwd = mkdtempSync(join(dir, 'offline-'));
      const target = join(cwd, 'weights', 'LibreYOLO9t.pt');
      expectCli(await runCli(['predict', 'model=LibreYOLO9t.pt'], cwd, { HF_HUB_OFFLINE: '1', HF_ENDPOINT: undefined }), 4,
        /^Error: Model weights not found: .*LibreYOLO9t\.pt\. HF_HUB_OFFLINE=1 forbids downloading them from https:\/\/huggingface\.co\/LibreYOLO\/LibreYOLO9t\/resolve\/main\/LibreYOLO9t\.pt\./m,
        /place it at .*LibreYOLO9t\.pt, or pass a local path to the weights\.$/m);
      await assert.rejects(LibreYOLO('LibreYOLO9t.pt', { cwd, env: { HF_HUB_OFFLINE: '1' } }),
        expectError('model_not_found', 4, new RegExp(`${target.replace(/[.\\]/g, '\\$&')}\\. HF_HUB_OFFLINE=1`)));
    });
  });
});
