/**
 * Hostile model files (issue 15, items 1-4 and the model-file parts of 9): zip bombs, expanding
 * tensor views, metadata used as sizes or names, path traversal, and the misleading errors. Every
 * input is crafted here byte by byte (test/helpers/craft.ts), fed to the real `libreyolo` process
 * or the public API, and checked for exit code and message; the denial-of-service cases also for
 * the child's peak RSS and wall time, and every CLI case for writing nothing outside its folder.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { crc32 } from 'node:zlib';
import { SAMPLE_IMAGE } from '../../src/assets.ts';
import { LibreYOLO } from '../../src/load.ts';
import { LibreYOLOError } from '../../src/errors.ts';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { deserializeModel, serializeModel } from '../../src/graph/onnx.ts';
import type { Dim } from '../../src/graph/ir.ts';
import { saveTiled } from '../../src/predict/tiled-save.ts';
import { insideOrThrow } from '../../src/util/fs.ts';
import { Boxes, Results } from '../../src/predict/results.ts';
import { loadCheckpointFile, parseCheckpoint } from '../../src/weights/checkpoint.ts';
import { readSafetensors, writeSafetensors } from '../../src/weights/safetensors.ts';
import { craftCheckpoint, craftZip, torchPickle, zeroBomb, type CraftValue } from '../helpers/craft.ts';
import { runCli, type CliRun } from '../helpers/cli.ts';
import { fixture } from '../helpers/fixtures.ts';

const REF_PT = fixture('yolo9t_ref.pt');
const MiB = 1 << 20;
/** The run folder of each CLI case lives inside `root`; nothing may appear in `root` outside it. */
const root = mkdtempSync(join(tmpdir(), 'libreyolo-hostile-'));
const dir = join(root, 'work');
const at = (name: string) => join(dir, name);
const SOURCE = `source=${SAMPLE_IMAGE}`;

const f32 = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);
const tensor = (key: string, numel: number, size: number[], extra: { offset?: number; stride?: number[] } = {}): CraftValue =>
  ({ tensor: { key, numel, size, ...extra } });
/** A deflated entry that unpacks to `mib` MiB of zeros and says so. */
const bombEntry = (name: string, mib: number) => ({ name, data: zeroBomb(mib), method: 8, size: mib * MiB, crc: 0 });

/** Every file under `root`, relative to it. */
function filesUnder(path: string): string[] {
  return readdirSync(path, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => relative(root, join(e.parentPath, e.name)));
}

let crafted: Set<string>;

/** Exit code, one clear message, no stack, nothing on stdout; and no file appeared outside `dir`. */
function expectCli(r: CliRun, exitCode: number, ...patterns: RegExp[]): void {
  assert.equal(r.code, exitCode, `exit code (stderr: ${r.stderr})`);
  assert.match(r.stderr, /^Error: /m);
  for (const p of patterns) assert.match(r.stderr, p);
  assert.doesNotMatch(r.stderr, /^\s+at |Maximum call stack|could not be cloned|RangeError/m, 'no stack trace or raw error');
  assert.equal(r.stdout, '');
  const outside = filesUnder(root).filter((f) => !f.startsWith(`work${'/'}`));
  assert.deepEqual(outside, [], 'nothing is written outside the working folder');
  const written = filesUnder(dir).filter((f) => !crafted.has(f));
  assert.deepEqual(written, [], 'a refused model writes nothing');
}

type MeasuredCliRun = CliRun & { peakRssMb: number };

/** The real CLI in `dir`, with the child's peak RSS (getrusage at exit) and wall time. */
async function runCliMeasured(args: string[], env: Record<string, string | undefined> = {}): Promise<MeasuredCliRun> {
  const r = await runCli(args, dir, env, { rss: true });
  if (r.peakRssMb === undefined) throw new Error(`the child reported no peak RSS (exit ${r.code}, killed?); stderr: ${r.stderr.slice(-2000)}`);
  return r as MeasuredCliRun;
}

let baseline: MeasuredCliRun;

/** Memory and time bounds for the denial-of-service cases: a few hundred MB over a trivial load. */
function expectBounded(r: MeasuredCliRun): void {
  const seconds = r.ms / 1000;
  process.stdout.write(`# peak RSS ${r.peakRssMb.toFixed(0)} MB (baseline ${baseline.peakRssMb.toFixed(0)} MB), ${seconds.toFixed(1)} s\n`);
  assert.ok(r.peakRssMb < 600, `peak RSS ${r.peakRssMb.toFixed(0)} MB (limit 600)`);
  assert.ok(r.peakRssMb < baseline.peakRssMb + 300, `peak RSS ${r.peakRssMb.toFixed(0)} MB vs baseline ${baseline.peakRssMb.toFixed(0)} MB`);
  assert.ok(seconds < 30, `took ${seconds.toFixed(1)} s (limit 30)`);
}

function expectError(code: string, ...patterns: RegExp[]) {
  return (e: unknown): true => {
    assert.ok(e instanceof LibreYOLOError, `expected a LibreYOLOError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    for (const p of patterns) assert.match(e.message, p);
    return true;
  };
}

const predict = (model: string, ...args: string[]) => runCliMeasured(['predict', `model=${model}`, SOURCE, ...args]);

/** A .pt checkpoint of `weights` (a yolo9 state dict from the fixture) plus `metadata`, written by hand. */
function checkpointWith(metadata: Record<string, CraftValue>): Uint8Array {
  // Tiny: one key that matches no family is enough to reach metadata checks, which come first.
  const pkl = torchPickle({ model: { 'encoder.layer0.weight': tensor('0', 4, [2, 2]) }, ...metadata });
  return craftCheckpoint(pkl, [{ name: '0', data: f32([1, 2, 3, 4]) }]);
}

/** An ONNX file: input `inputShape`, output `output` `outputShape` (a broadcast of the input's mean), `metadata`. */
function onnxWith(inputShape: Dim[], outputShape: Dim[], metadata: Record<string, string>): Uint8Array {
  const b = new GraphBuilder('crafted');
  const x = b.input('images', 'float32', inputShape);
  const mean = b.op('ReduceMean', [x], { keepdims: { i: 0 } });
  b.output('output', b.op('Expand', [mean, b.constant('shape', { dtype: 'int64', dims: [3], data: BigInt64Array.of(1n, 6n, 84n) })]), 'float32', outputShape);
  for (const [k, v] of Object.entries(metadata)) b.graph.metadata.set(k, v);
  return serializeModel(b.graph);
}

/** Our export of the reference yolo9t (static [1,84,8400] output, LibreYOLO metadata) with some metadata replaced. */
let refGraphBytes: Uint8Array;
function refOnnxWith(changes: Record<string, string>): Uint8Array {
  const g = deserializeModel(refGraphBytes);
  for (const [k, v] of Object.entries(changes)) g.metadata.set(k, v);
  return serializeModel(g);
}

before(async () => {
  mkdirSync(dir, { recursive: true });
  const exporter = await LibreYOLO(REF_PT);
  try {
    refGraphBytes = readFileSync(await exporter.export({ format: 'onnx', output_path: join(root, 'ref.onnx') }));
  } finally {
    await exporter.close();
  }
  rmSync(join(root, 'ref.onnx'));
  const write = (name: string, bytes: Uint8Array) => writeFileSync(at(name), bytes);

  write('plain.pt', checkpointWith({}));
  // Item 1: zip bombs. 40 storages of 256 MiB each (10 GiB) from ~10 MB, honestly declared.
  const big = Array.from({ length: 40 }, (_, i) => [`w${i}`, tensor(String(i), 64 * MiB, [64 * MiB])] as const);
  write('bomb-honest.pt', craftCheckpoint(torchPickle({ model: Object.fromEntries(big) }), big.map((_, i) => bombEntry(String(i), 256))));
  // One storage of 16 floats whose entry declares 10 GiB (zip64).
  write('bomb-declared.pt', craftCheckpoint(torchPickle({ model: { w: tensor('0', 16, [16]) } }), [bombEntry('0', 10240)]));
  // One storage of 16 floats declared as 64 bytes, whose deflate stream holds 10 GiB.
  write('bomb-lying.pt', craftCheckpoint(torchPickle({ model: { w: tensor('0', 16, [16]) } }), [{ ...bombEntry('0', 10240), size: 64 }]));
  // Overlapping entries: 2000 directory records pointing at the same 256 MiB deflate kernel.
  const kernel = bombEntry('archive/data/0', 256);
  const overlapPkl = torchPickle({ model: { w: tensor('0', 64 * MiB, [64 * MiB]) } });
  const kernelAt = 30 + 'archive/data.pkl'.length + overlapPkl.length;
  write('bomb-overlap.pt', craftZip([
    { name: 'archive/data.pkl', data: overlapPkl },
    kernel,
    ...Array.from({ length: 2000 }, (_, i) => ({ ...kernel, name: `archive/data/x${i}`, offset: kernelAt })),
  ]));
  const four = Array.from({ length: 4 }, (_, i) => [`w${i}`, tensor(String(i), 8 * MiB, [8 * MiB])] as const);
  write('compressible.pt', craftCheckpoint(torchPickle({ model: Object.fromEntries(four) }), four.map((_, i) => ({ ...bombEntry(String(i), 32), crc: crc32(new Uint8Array(32 * MiB)) >>> 0 }))));
  const good16 = f32(Array.from({ length: 16 }, (_, i) => i));
  write('bad-crc.pt', craftCheckpoint(torchPickle({ model: { w: tensor('0', 16, [16]) } }), [{ name: '0', data: good16, crc: (crc32(good16) ^ 1) >>> 0 }]));
  write('duplicate.pt', craftCheckpoint(torchPickle({ model: { w: tensor('0', 16, [16]) } }), [{ name: '0', data: good16 }, { name: '0', data: good16 }]));
  write('bzip2.pt', craftCheckpoint(torchPickle({ model: { w: tensor('0', 16, [16]) } }), [{ name: '0', data: good16, method: 12 }]));

  // Item 2: views that expand. 100 stride-0 views of 16 Mi elements over a 4-float storage (6.4 GB).
  const expand = Array.from({ length: 100 }, (_, i) => [`w${i}`, tensor('0', 4, [1 << 24], { stride: [0] })] as const);
  write('views-stride0.pt', craftCheckpoint(torchPickle({ model: Object.fromEntries(expand) }), [{ name: '0', data: f32([1, 2, 3, 4]) }]));
  // 1000 full views of one 4 MiB storage placed at an odd offset, so each view must be copied (4 GB).
  write('views-unaligned.pt', unalignedViews(1000));

  // Item 3: metadata used as sizes and drawn as labels.
  write('nc-huge.pt', checkpointWith({ nc: 1_000_000_000 }));
  write('imgsz-huge.pt', checkpointWith({ imgsz: 100000 }));
  write('names-key.pt', checkpointWith({ names: new Map<CraftValue, CraftValue>([[0, 'cat'], ['a', 'dog']]) }));
  write('size-traversal.pt', checkpointWith({ size: '../../../escape' }));
  // The real yolo9t weights with 3 names for its 80 classes.
  const ref = await loadCheckpointFile(REF_PT);
  const { saveCheckpointPt } = await import('../../src/weights/checkpoint.ts');
  await saveCheckpointPt(at('names-count.pt'), ref.stateDict, { ...ref.metadata, names: { 0: 'a', 1: 'b', 2: 'c' }, nc: undefined });
  // Control and bidi characters in names load, as in the original (they are escaped where written: test/unit/class-names.test.ts).
  await saveCheckpointPt(at('names-control.pt'), ref.stateDict, { ...ref.metadata, names: Object.fromEntries(Array.from({ length: 80 }, (_, i) => [i, i === 0 ? 'ca\u0001t' : i === 1 ? 'd\u202Eog' : `c${i}`])), nc: undefined });
  write('imgsz-huge.safetensors', writeSafetensors(new Map([['w', { dtype: 'float32', dims: [1], data: Float32Array.of(1) }]]), { imgsz: '100000' }));
  write('names-bad.safetensors', writeSafetensors(new Map([['w', { dtype: 'float32', dims: [1], data: Float32Array.of(1) }]]), { names: '{0: cat' }));
  write('nc-huge.onnx', onnxWith([1, 3, 64, 64], [1, 'c', 'n'], { model_family: 'yolo9', nc: '1000000000' }));
  write('nc-mismatch.onnx', refOnnxWith({ nc: '91' }));
  write('names-key.onnx', refOnnxWith({ names: JSON.stringify({ ...Object.fromEntries(Array.from({ length: 79 }, (_, i) => [String(i), `c${i}`])), x: 'bad' }) }));
  write('names-control.onnx', refOnnxWith({ names: JSON.stringify(Object.fromEntries(Array.from({ length: 80 }, (_, i) => [String(i), i === 5 ? 'a\u0007b' : `c${i}`]))) }));
  write('imgsz-huge.onnx', onnxWith([1, 3, 'h', 'w'], [1, 6, 'n'], { model_family: 'yolo9', nc: '2', imgsz: '100000' }));
  write('family-unknown.onnx', refOnnxWith({ model_family: 'evil' }));
  // Item 4: the size that used to become the tiled-save folder name.
  write('size-traversal.onnx', refOnnxWith({ size: '../../../escape', model_size: '../../../escape' }));
  // Item 9: a static 30000x30000 input.
  write('input-huge.onnx', onnxWith([1, 3, 30000, 30000], [1, 6, 'n'], { model_family: 'yolo9', nc: '2' }));
  // Item 9: metadata nested half a million lists deep (EMPTY_LIST x N, then APPEND x N-1).
  const depth = 500_000;
  const deep = new Uint8Array(depth * 2 + 64);
  let p = 0;
  const put = (...b: number[]) => { for (const x of b) deep[p++] = x; };
  put(0x80, 0x02, 0x7d); // PROTO 2, EMPTY_DICT
  put(0x58, 4, 0, 0, 0, ...Buffer.from('meta'));
  for (let i = 0; i < depth; i++) put(0x5d);
  for (let i = 1; i < depth; i++) put(0x61);
  put(0x73, 0x2e); // SETITEM, STOP
  write('deep.pt', craftCheckpoint(deep.subarray(0, p)));
  // A pickle is a program: 2 bytes (EMPTY_LIST, APPEND) make a list; 3 MB ask for 1.5 million of them.
  const many = 1_500_000;
  const flat = new Uint8Array(many * 2 + 16);
  flat.set([0x80, 0x02, 0x7d, 0x58, 4, 0, 0, 0, ...Buffer.from('meta'), 0x5d]);
  for (let i = 0; i < many; i++) flat.set([0x5d, 0x61], 13 + 2 * i);
  flat.set([0x73, 0x2e], 13 + 2 * many);
  write('objects.pt', craftCheckpoint(flat.subarray(0, 15 + 2 * many)));

  crafted = new Set(filesUnder(dir));
  baseline = await predict('plain.pt');
});

/** `count` full views of one 4 MiB storage whose entry starts at an odd byte: no float view of it is zero-copy. */
function unalignedViews(count: number): Uint8Array {
  for (let len = 1; len < 8; len++) {
    const key = '1234567'.slice(0, len);
    const pkl = torchPickle({ model: Object.fromEntries(Array.from({ length: count }, (_, i) => [`w${i}`, tensor(key, MiB, [MiB])])) });
    // craftCheckpoint lays out data.pkl first, then the storage: two local headers (30 bytes) and names before its data.
    const dataAt = 30 + 'archive/data.pkl'.length + pkl.length + 30 + `archive/data/${key}`.length;
    if (dataAt % 2 === 1) return craftCheckpoint(pkl, [{ name: key, data: new Uint8Array(4 * MiB) }]);
  }
  throw new Error('no key length puts the storage at an odd offset');
}

after(() => rmSync(root, { recursive: true, force: true }));

describe('zip bombs in .pt (issue 15 item 1)', { concurrency: 2 }, () => {
  test('baseline: a tiny checkpoint that matches no family', () => {
    expectCli(baseline, 4, /match no supported model family/);
    assert.ok(baseline.peakRssMb < 450, `baseline peak RSS ${baseline.peakRssMb.toFixed(0)} MB`);
  });

  test('honest sizes, 10 GiB from 10 MB: refused by the unpack ratio before inflating', async () => {
    const r = await predict('bomb-honest.pt');
    expectCli(r, 4, /^Error: Cannot load .*bomb-honest\.pt: its entries would unpack to more than [\d.]+ MiB from a [\d.]+ MiB archive, over 10 times its size plus 64 MiB \(a zip bomb, or an unusually compressible archive\)\. If you trust the file: To allow more, set LIBREYOLO_MAX_UNZIP_RATIO/m);
    expectBounded(r);
  });

  test('an entry declaring 10 GiB for a 16-float storage', async () => {
    const r = await predict('bomb-declared.pt');
    expectCli(r, 4, /storage 0 declares 10737418240 bytes, but the pickle describes 16 float32 elements \(64 bytes\); the file is damaged or crafted\./);
    expectBounded(r);
  });

  test('an entry declaring 64 bytes whose stream holds 10 GiB stops at 64', async () => {
    const r = await predict('bomb-lying.pt');
    expectCli(r, 4, /entry 'archive\/data\/0' unpacks to more than the 64 bytes it declares \(a damaged archive or a zip bomb\); the file is damaged/);
    expectBounded(r);
  });

  test('2000 directory records sharing one deflate kernel (overlapping-file bomb)', async () => {
    const r = await predict('bomb-overlap.pt');
    expectCli(r, 4, /entries 'archive\/data\/0' and 'archive\/data\/x\d+' overlap in the file \(a zip bomb pattern\)/);
    expectBounded(r);
  });

  test('a bad CRC, a duplicate entry name', async () => {
    expectCli(await predict('bad-crc.pt'), 4, /entry 'archive\/data\/0' fails its CRC-32 check; the file is damaged\. Re-download it/);
    expectCli(await predict('duplicate.pt'), 4, /the archive lists entry 'archive\/data\/0' twice/);
  });

  test('a bzip2 entry is named as unsupported compression, not "truncated" (item 9)', async () => {
    const r = await predict('bzip2.pt');
    expectCli(r, 4, /entry 'archive\/data\/0' uses bzip2 compression \(zip method 12\), which is not supported: only stored and deflate entries can be read\. Re-save it with torch\.save/);
    assert.doesNotMatch(r.stderr, /truncated/);
  });

  test('the limits are configurable: lower the total, raise the ratio, refuse a bad value', async () => {
    const low = await runCliMeasured(['predict', 'model=bomb-honest.pt', SOURCE], { LIBREYOLO_MAX_UNZIP_BYTES: '8M' });
    expectCli(low, 4, /its entries would unpack to more than 8 MiB in all, over the limit of 8 MiB\. If you trust the file: To allow more, set LIBREYOLO_MAX_UNZIP_BYTES/);
    // 128 MiB of deflated zeros in ~130 KB: past the default ratio, accepted with a higher one (and
    // then refused for what it is: weights of no known family).
    expectCli(await predict('compressible.pt'), 4, /over 10 times its size plus 64 MiB/);
    expectCli(await runCli(['predict', 'model=compressible.pt', SOURCE], dir, { LIBREYOLO_MAX_UNZIP_RATIO: '2000' }), 4, /match no supported model family/);
    expectCli(await runCli(['predict', 'model=bomb-honest.pt', SOURCE], dir, { LIBREYOLO_MAX_UNZIP_RATIO: 'lots' }), 2,
      /LIBREYOLO_MAX_UNZIP_RATIO must be a positive number \(a ratio, such as 10 or 2\.5\), got 'lots'/);
  });
});

describe('dataset zip bombs (issue 15 item 1)', () => {
  let server: Server;
  let url = '';
  before(async () => {
    const labels = { name: 'ds/labels/train/a.txt', data: Buffer.from('0 0.5 0.5 0.1 0.1\n') };
    const files = Array.from({ length: 40 }, (_, i) => bombEntry(`ds/images/train/${i}.png`, 256));
    const bodies = new Map([['/bomb.zip', craftZip([labels, ...files])], ['/big-entry.zip', craftZip([labels, bombEntry('ds/images/train/a.png', 10240)])]]);
    server = createServer((req, res) => {
      const body = bodies.get(req.url ?? '');
      res.writeHead(body ? 200 : 404, { 'content-length': body?.length ?? 0 });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const a = server.address();
    url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
    for (const name of ['bomb', 'big-entry']) {
      writeFileSync(at(`${name}.yaml`), `path: ${name}\ntrain: images/train\nval: images/train\nnames: [a]\ndownload: ${url}/${name}.zip\n`);
    }
    crafted = new Set(filesUnder(dir));
  });
  after(async () => { await new Promise((r) => server.close(r)); });

  test('libreyolo data check refuses a 10 GiB dataset zip without unpacking it', async () => {
    const env = { HF_HUB_OFFLINE: undefined, LIBREYOLO_DATASETS_DIR: join(dir, 'datasets') };
    const r = await runCliMeasured(['data', 'check', 'bomb.yaml'], env);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /its entries would unpack to more than [\d.]+ MiB from a [\d.]+ MiB archive, over 10 times its size plus 64 MiB/);
    expectBounded(r);
    const one = await runCliMeasured(['data', 'check', 'big-entry.yaml'], env);
    assert.equal(one.code, 3, one.stderr);
    assert.match(one.stderr, /entry 'ds\/images\/train\/a\.png' would unpack to 10 GiB, over the limit of 2 GiB for one entry\. If you trust the file: To allow more, set LIBREYOLO_MAX_ZIP_ENTRY_BYTES/);
    expectBounded(one);
    assert.deepEqual(filesUnder(dir).filter((f) => f.includes('datasets')), [], 'no partial dataset is left behind');
  });
});

describe('tensor views that expand (issue 15 item 2)', { concurrency: 2 }, () => {
  test('100 stride-0 views of 16 Mi elements over 4 floats', async () => {
    const r = await predict('views-stride0.pt');
    expectCli(r, 4, /its tensors would take 128 MiB \(tensor float32\[16777216\] is the one that passes the limit\), but the file holds only 16 bytes of storage;.* may add up to 2 times the storage plus 64 MiB\. The file is crafted or damaged\. If you trust it: To allow more, set LIBREYOLO_MAX_TENSOR_EXPANSION/);
    expectBounded(r);
  });

  test('1000 full views of one unaligned 4 MiB storage (each a copy)', async () => {
    const r = await predict('views-unaligned.pt');
    expectCli(r, 4, /its tensors would take [\d.]+ MiB .* but the file holds only 4 MiB of storage/);
    expectBounded(r);
  });

  test('views that split one storage (q, k, v of a fused weight) still load', () => {
    const pkl = torchPickle({ model: { q: tensor('0', 12, [4], { offset: 0 }), k: tensor('0', 12, [4], { offset: 4 }), v: tensor('0', 12, [4], { offset: 8 }) } });
    const ck = parseCheckpoint(craftCheckpoint(pkl, [{ name: '0', data: f32(Array.from({ length: 12 }, (_, i) => i)) }]), 'qkv.pt');
    assert.deepEqual([...ck.stateDict.get('q')!.data], [0, 1, 2, 3]);
    assert.deepEqual([...ck.stateDict.get('v')!.data], [8, 9, 10, 11]);
  });
});

describe('metadata trusted as sizes (issue 15 item 3)', { concurrency: 2 }, () => {
  const field = (name: string, why: string) => new RegExp(`^Error: Cannot load .*: metadata field '${name.replace(/[[\]]/g, '\\$&')}' ${why}.*\\. Re-export or re-save the model`, 'm');

  test('.pt: nc, imgsz, names keys, size; names with control characters load', async () => {
    expectCli(await predict('nc-huge.pt'), 4, field('nc', 'is 1000000000, over the limit of 100000 \\(set LIBREYOLO_MAX_CLASSES or setLimits\\(\\{ classes \\}\\) to allow more\\)'));
    expectCli(await predict('imgsz-huge.pt'), 4, field('imgsz', 'is 100000, over the limit of 4096 \\(set LIBREYOLO_MAX_IMGSZ or setLimits\\(\\{ imgsz \\}\\) to allow more\\)'));
    expectCli(await predict('names-key.pt'), 4, field('names', 'has the key "a"; keys must be class ids 0, 1, 2, \\.\\.\\.'));
    const control = await predict('names-control.pt');
    assert.equal(control.code, 0, control.stderr);
    assert.doesNotMatch(control.stdout, /[\u0001\u202e]/, 'names are escaped on the terminal');
    expectCli(await predict('size-traversal.pt'), 4, field('size', 'is "\\.\\./\\.\\./\\.\\./escape": expected letters, digits'));
  });

  test('.pt: names must cover exactly the classes the network predicts', async () => {
    expectCli(await predict('names-count.pt'), 4, field('names', 'has 3 entries, but the model predicts 80 classes'));
  });

  test('.safetensors: imgsz and names', async () => {
    expectCli(await predict('imgsz-huge.safetensors'), 4, field('imgsz', 'is 100000, over the limit of 4096'));
    expectCli(await predict('names-bad.safetensors'), 4, field('names', 'is not valid JSON \\("\\{0: cat"\\)'));
  });

  test('.onnx: nc over the limit (symbolic output), nc against the output, names, imgsz, family', async () => {
    const r = await predict('nc-huge.onnx');
    expectCli(r, 4, field('nc', 'is 1000000000, over the limit of 100000'));
    expectBounded(r);
    expectCli(await predict('nc-mismatch.onnx'), 4, field('nc', 'is 91, but the output output \\[1,84,8400\\] has 80 class columns'));
    expectCli(await predict('names-key.onnx'), 4, field('names', 'has the key "x"; keys must be class ids'));
    const control = await predict('names-control.onnx');
    assert.equal(control.code, 0, control.stderr);
    expectCli(await predict('imgsz-huge.onnx'), 4, field('imgsz', 'is 100000, over the limit of 4096'));
    expectCli(await predict('family-unknown.onnx'), 4, field('model_family', 'is "evil", which is not one of yolo9'));
  });

  test('LIBREYOLO_MAX_IMGSZ raises the imgsz limit (and is read from the environment)', async () => {
    const r = await runCli(['predict', 'model=imgsz-huge.pt', SOURCE], dir, { LIBREYOLO_MAX_IMGSZ: '200000' });
    // Past the imgsz check, the tiny checkpoint fails where any unknown network does.
    expectCli(r, 4, /match no supported model family/);
  });

  test('labels with control characters still draw (SVG escaping)', async () => {
    const { detectionsSvg, encodeImage } = await import('../../src/predict/save.ts');
    const boxes = new Boxes(Float32Array.of(2, 2, 20, 20), Float32Array.of(0.9), Float32Array.of(0));
    const result = new Results({ boxes, names: { 0: 'a\u0001<b>&\u0007\ud800' }, orig_shape: [32, 32] });
    const svg = detectionsSvg(32, 32, result);
    assert.doesNotMatch(svg, /[\u0000-\u0008\u000b\u000c\u000e-\u001f]|\ud800/);
    // Controls as visible escapes (util/text.ts printable), markup as references, a lone surrogate as U+FFFD.
    assert.match(svg, /a\\u0001&#60;b&#62;&#38;\\u0007\ufffd 0\.90/);
    const png = await encodeImage({ width: 32, height: 32, data: new Uint8Array(32 * 32 * 3) }, 'png', svg);
    assert.ok(png.length > 0);
  });
});

describe('path traversal through metadata (issue 15 item 4)', () => {
  test('an ONNX size of ../../../escape is refused before anything is written', async () => {
    const r = await predict('size-traversal.onnx', 'save=true', 'tiling=true');
    expectCli(r, 4, /metadata field 'size' is "\.\.\/\.\.\/\.\.\/escape"/);
  });

  test('saveTiled keeps stem, family and size to one segment under the run folder', async () => {
    const base = mkdtempSync(join(tmpdir(), 'libreyolo-tiled-'));
    after(() => rmSync(base, { recursive: true, force: true }));
    const image = { width: 32, height: 32, data: new Uint8Array(32 * 32 * 3) };
    const result = new Results({ boxes: new Boxes(new Float32Array(0), new Float32Array(0), new Float32Array(0)), names: { 0: 'a' }, orig_shape: [32, 32] });
    const out = await saveTiled({
      image, result, tiles: [image], slices: [[0, 0, 32, 32]], stem: '../../../stem', family: '..\\..\\fam', size: '../../../escape',
      ext: 'jpg', baseDir: base, tileSize: 32, overlapRatio: 0.2, conf: 0.25, iou: 0.45,
    });
    assert.equal(relative(join(base, 'runs', 'tiled_detections'), out.dir).split(/[\\/]/).length, 1, out.dir);
    assert.match(out.dir, /\/\.\._\.\._\.\._stem_\.\._\.\._fam_\.\._\.\._\.\._escape_\d{8}_\d{6}_\d{6}$/);
    const written = readdirSync(base, { recursive: true, withFileTypes: true }).filter((e) => !e.isDirectory()).map((e) => relative(base, join(e.parentPath, e.name)));
    assert.equal(written.length, 4, written.join(', '));
    for (const f of written) assert.ok(f.startsWith(join('runs', 'tiled_detections', relative(join(base, 'runs', 'tiled_detections'), out.dir))), f);
    // The final check itself: a name that still climbs out (or is the folder itself) is refused.
    for (const bad of ['../x', '..', '', '/etc/x']) assert.throws(() => insideOrThrow(base, bad, 'a test folder'), expectError('io_error', /Refused to write a test folder/));
    assert.equal(insideOrThrow(base, '.._x', 'a test folder'), join(base, '.._x'));
  });
});

describe('misleading errors (issue 15 item 9, model files)', { concurrency: 2 }, () => {
  test('a torch.save(..., pickle_protocol=1) checkpoint loads (INT/LONG text opcodes)', () => {
    // data.pkl as CPython's pickle writes it at protocol 1 for the object torch.save pickles (an
    // OrderedDict state dict with _metadata, tensors as _rebuild_tensor_v2 with persistent ids):
    // {'model': sd, 'nc': 2, 'names': {0: 'cat', 1: 'dog'}, 'imgsz': 640, 'half': False, 'ok': True,
    //  'big': 2**40, 'lr': 0.01, 'size': 't'}; no PROTO opcode, booleans as I00/I01, 2**40 as LONG.
    const pkl = Buffer.from(PROTOCOL1_PKL, 'hex');
    const zip = craftCheckpoint(pkl, [{ name: '0', data: f32([1, 2, 3, 4]) }, { name: '1', data: f32([5, 6]) }]);
    const ck = parseCheckpoint(zip, 'proto1.pt');
    assert.deepEqual([...ck.stateDict.keys()], ['conv.weight', 'conv.bias']);
    assert.deepEqual(ck.stateDict.get('conv.weight')!.dims, [2, 2]);
    assert.deepEqual([...ck.stateDict.get('conv.bias')!.data], [5, 6]);
    assert.deepEqual(ck.metadata, { nc: 2, names: { 0: 'cat', 1: 'dog' }, imgsz: 640, half: false, ok: true, big: 2 ** 40, lr: 0.01, size: 't' });
  });

  test('a pickle that creates 1.5 million objects in 3 MB is refused (pickleObjects)', async () => {
    const r = await predict('objects.pt');
    expectCli(r, 4, /^Error: Cannot load .*objects\.pt: its pickle creates more than 1000000 objects \(at byte \d+\); a checkpoint needs about 20 per tensor\. The file is crafted or damaged\. If you trust it: To allow more, set LIBREYOLO_MAX_PICKLE_OBJECTS/m);
    expectBounded(r);
  });

  test('a pickle nested half a million lists deep exits 4 with a clear message', async () => {
    const r = await predict('deep.pt');
    expectCli(r, 4, /^Error: Cannot load .*deep\.pt: its metadata nests containers more than 100 levels deep, which no checkpoint needs; the file is damaged or crafted\.$/m);
    expectBounded(r);
  });

  test('safetensors with overlapping, duplicate or gapped offsets are refused, as the reference does', () => {
    const file = (entries: Record<string, [number, number]>, dataBytes: number) => {
      const header = JSON.stringify(Object.fromEntries(Object.entries(entries).map(([k, o]) => [k, { dtype: 'F32', shape: [(o[1] - o[0]) / 4], data_offsets: o }])));
      const h = Buffer.from(header);
      const out = Buffer.alloc(8 + h.length + dataBytes);
      out.writeBigUInt64LE(BigInt(h.length));
      h.copy(out, 8);
      return new Uint8Array(out);
    };
    const bad = (bytes: Uint8Array, why: RegExp) => assert.throws(() => readSafetensors(bytes, 'x.safetensors'), expectError('model_load_failed', why));
    bad(file({ a: [0, 8], b: [4, 12] }, 12), /tensor b data \[4, 12\) overlaps the tensor before it/);
    bad(file({ a: [0, 8], b: [0, 8] }, 8), /tensor [ab] data \[0, 8\) overlaps the tensor before it/);
    bad(file({ a: [0, 4], b: [8, 12] }, 12), /tensor b data starts at 8, leaving a gap after byte 4/);
    bad(file({ a: [0, 4] }, 12), /the tensors cover 4 of the 12 data bytes/);
    assert.equal(readSafetensors(file({ a: [0, 4], b: [4, 12] }, 12), 'ok.safetensors').tensors.size, 2);
  });

  test('a 30000x30000 ONNX input fails clearly, not "#<ArrayBuffer> could not be cloned"', async () => {
    const r = await predict('input-huge.onnx');
    expectCli(r, 4, /^Error: Cannot load .*input-huge\.onnx: its input is input images \[1,3,30000,30000\].*, with a side of 30000 pixels, over the limit of 4096 \(set LIBREYOLO_MAX_IMGSZ or setLimits\(\{ imgsz \}\) to allow more\)\. Re-export the model at a smaller imgsz\.$/m);
    expectBounded(r);
  });
});

const PROTOCOL1_PKL = '7d71002858050000006d6f64656c710163636f6c6c656374696f6e730a4f726465726564446963740a71022952710328580b000000636f6e762e776569676874710463746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f76320a71052828580700000073746f72616765710663746f7263680a466c6f617453746f726167650a71075801000000307108580300000063707571094b0474710a514b00284b024b0274710b284b024b0174710c4930300a68022952710d74710e52710f5809000000636f6e762e6269617371106805282868066807580100000031711168094b02747112514b00284b02747113284b017471144930300a680229527115747116527117757d711858090000005f6d65746164617461711968022952711a285800000000711b7d711c580700000076657273696f6e711d4b01735804000000636f6e76711e7d711f681d4b017375736258020000006e6371204b0258050000006e616d657371217d7122284b00580300000063617471234b015803000000646f677124755805000000696d67737a71254d8002580400000068616c6671264930300a58020000006f6b71274930310a580300000062696771284c313039393531313632373737364c0a58020000006c727129473f847ae147ae147b580400000073697a65712a580100000074712b752e';
