import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { unzipSync, zipSync } from 'fflate';
import { LibreYOLOError } from '../../src/errors.ts';
import { createFreshModel, LibreYOLO } from '../../src/load.ts';
import { toBytes, zeros, type DType, type HostTensor } from '../../src/graph/tensor.ts';
import { loadCheckpointFile, parseCheckpoint, saveCheckpointPt } from '../../src/weights/checkpoint.ts';
import { PyOrderedDict, type PyValue } from '../../src/weights/pickle/index.ts';
import { readSafetensors, writeSafetensors } from '../../src/weights/safetensors.ts';
import { readTorchCheckpoint, writeTorchCheckpoint } from '../../src/weights/torch-checkpoint.ts';
import { fixture } from '../helpers/fixtures.ts';


const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-ckpt-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function isLoadFailed(path: string, pattern: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof LibreYOLOError, `expected LibreYOLOError, got ${String(e)}`);
    assert.equal(e.code, 'model_load_failed');
    assert.ok(e.message.includes(path), `message should name ${path}: ${e.message}`);
    assert.match(e.message, pattern);
    return true;
  };
}

/** One small tensor of every dtype, with recognisable contents. */
function sampleTensors(): Map<string, HostTensor> {
  const dtypes: DType[] = ['float32', 'float16', 'bfloat16', 'float64', 'int64', 'int32', 'int16', 'int8', 'uint8', 'bool'];
  const m = new Map<string, HostTensor>();
  dtypes.forEach((dtype, k) => {
    const t = zeros(dtype, [2, 3]);
    const bytes = toBytes(t);
    for (let i = 0; i < bytes.length; i++) bytes[i] = dtype === 'bool' ? (i + k) % 2 : (i * 7 + k) & 0xff;
    m.set(`layer.${dtype}.weight`, t);
  });
  m.set('scalar.num_batches_tracked', { dtype: 'int64', dims: [], data: BigInt64Array.from([42n]) });
  m.set('empty', zeros('float32', [0, 4]));
  return m;
}

function assertSameTensors(a: Map<string, HostTensor>, b: Map<string, HostTensor>): void {
  assert.deepEqual([...b.keys()], [...a.keys()]);
  for (const [k, t] of a) {
    const u = b.get(k)!;
    assert.equal(u.dtype, t.dtype, k);
    assert.deepEqual(u.dims, t.dims, k);
    assert.deepEqual(toBytes(u), toBytes(t), k);
  }
}

test('reads the reference checkpoint written by torch.save', () => {
  const path = fixture('yolo9t_ref.pt');
  const top = readTorchCheckpoint(readFileSync(path), path) as Map<PyValue, PyValue>;
  assert.ok(top.get('model') instanceof PyOrderedDict, 'the state dict is a collections.OrderedDict');
  const sd = top.get('model') as Map<string, HostTensor>;
  assert.equal(sd.size, 1338);
  const w = sd.get('backbone.conv0.conv.weight')!;
  assert.equal(w.dtype, 'float32');
  assert.deepEqual(w.dims, [16, 3, 3, 3]);
  assert.equal(w.data.length, 432);
  assert.ok((w.data as Float32Array).some((x) => x !== 0));
  const nbt = sd.get('backbone.conv0.bn.num_batches_tracked')!;
  assert.equal(nbt.dtype, 'int64');
  assert.deepEqual(nbt.dims, []);
  assert.equal(nbt.data.length, 1);
  assert.ok(sd.has('head.cv3.2.2.bias'));
  assert.equal(top.get('nc'), 80);
  assert.equal(top.get('size'), 't');
  assert.equal(top.get('model_family'), 'yolo9');
  assert.equal(top.get('schema_version'), '1.0');
  const names = top.get('names') as Map<PyValue, PyValue>;
  assert.equal(names.get(0), 'class0');
  assert.equal(names.size, 80);
});

test('loadCheckpointFile picks the state dict and typed metadata', async () => {
  const ck = await loadCheckpointFile(fixture('yolo9t_ref.pt'));
  assert.equal(ck.format, 'pt');
  assert.equal(ck.stateDict.size, 1338);
  assert.deepEqual(ck.stateDict.get('backbone.conv0.conv.weight')!.dims, [16, 3, 3, 3]);
  assert.equal(ck.metadata.nc, 80);
  assert.equal(ck.metadata.size, 't');
  assert.equal(ck.metadata.task, 'detect');
  assert.equal(ck.metadata.model_family, 'yolo9');
  assert.equal(ck.metadata.imgsz, 640);
  assert.equal(ck.metadata.names![0], 'class0');
  assert.equal(ck.metadata.names![79], 'class79');
  assert.equal(ck.metadata.schema_version, '1.0');
  assert.equal('model' in ck.metadata, false);
  assert.deepEqual(ck.warnings, []);
});

test('a truncated .pt (half the fixture) fails with a clear error', async () => {
  const bytes = readFileSync(fixture('yolo9t_ref.pt'));
  const half = bytes.subarray(0, bytes.length >> 1);
  assert.throws(() => readTorchCheckpoint(half, 'half.pt'), isLoadFailed('half.pt', /truncated or is not a PyTorch zip checkpoint.*re-download/i));
  const p = join(tmp, 'half.pt');
  writeFileSync(p, half);
  await assert.rejects(loadCheckpointFile(p), isLoadFailed(p, /truncated/));
});

test('not-a-zip, legacy torch and missing files are reported clearly', async () => {
  assert.throws(() => readTorchCheckpoint(Buffer.from('hello, this is text and not weights'), 'x.pt'), isLoadFailed('x.pt', /not a PyTorch zip/));
  const legacy = Uint8Array.from([0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e]);
  assert.throws(() => readTorchCheckpoint(legacy, 'old.pt'), isLoadFailed('old.pt', /legacy.*PyTorch < 1\.6/));
  await assert.rejects(loadCheckpointFile(join(tmp, 'nope.pt')), (e: unknown) => e instanceof LibreYOLOError && e.code === 'model_not_found');
});

test('a storage entry shorter than its tensor is reported as damaged', () => {
  const bytes = writeTorchCheckpoint({ model: new PyOrderedDict([['w', zeros('float32', [4])]]) });
  const files = unzipSync(bytes);
  assert.deepEqual(Object.keys(files), ['archive/data.pkl', 'archive/byteorder', 'archive/data/0', 'archive/version']);
  // Rebuild the zip with a cut storage and check the reader notices instead of reading past it.
  const cut = { ...files, 'archive/data/0': files['archive/data/0']!.subarray(0, 8) };
  assert.throws(() => readTorchCheckpoint(zipSync(cut, { level: 0 }), 'cut.pt'), isLoadFailed('cut.pt', /storage 0 holds 8 bytes/));
});

test('pt write/read round trip keeps every dtype, scalar and empty tensor', () => {
  const sd = sampleTensors();
  const bytes = writeTorchCheckpoint({ model: new PyOrderedDict(sd), nc: 2, names: new Map<PyValue, PyValue>([[0, 'a'], [1, 'b']]) });
  const top = readTorchCheckpoint(bytes, 'rt.pt') as Map<PyValue, PyValue>;
  assertSameTensors(sd, top.get('model') as Map<string, HostTensor>);
  assert.equal(top.get('nc'), 2);
  assert.equal((top.get('names') as Map<PyValue, PyValue>).get(1), 'b');
});

test('re-writing the reference checkpoint reproduces it', () => {
  const path = fixture('yolo9t_ref.pt');
  const ref = readTorchCheckpoint(readFileSync(path), path) as Map<PyValue, PyValue>;
  const again = readTorchCheckpoint(writeTorchCheckpoint(ref), 'again.pt') as Map<PyValue, PyValue>;
  assert.deepEqual([...again.keys()], [...ref.keys()]);
  assertSameTensors(ref.get('model') as Map<string, HostTensor>, again.get('model') as Map<string, HostTensor>);
  for (const k of ref.keys()) if (k !== 'model') assert.deepEqual(again.get(k), ref.get(k), String(k));
});

test('written archives align every record to 64 bytes, like torch', () => {
  const bytes = writeTorchCheckpoint({ model: new PyOrderedDict(sampleTensors()) });
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let off = 0;
  let records = 0;
  while (view.getUint32(off, true) === 0x04034b50) { // walk the local headers
    const size = view.getUint32(off + 18, true);
    const start = off + 30 + view.getUint16(off + 26, true) + view.getUint16(off + 28, true);
    assert.equal(start % 64, 0, `record ${records} data at ${start}`);
    assert.equal(view.getUint16(off + 8, true), 0, 'stored, not deflated');
    off = start + size;
    records++;
  }
  assert.equal(records, 3 + sampleTensors().size); // data.pkl, byteorder, version + one storage each
});

test('saveCheckpointPt writes atomically and loads back with metadata', async () => {
  const dir = join(tmp, 'save');
  const path = join(dir, 'model.pt');
  const sd = sampleTensors();
  await saveCheckpointPt(path, sd, {
    schema_version: '1.0', model_family: 'yolo9', size: 's', task: 'detect', nc: 3, names: ['cat', 'dog', 'emu'], imgsz: 640,
    config: { lr0: 0.01, epochs: 3, flags: [true, null] },
  });
  assert.deepEqual(readdirSync(dir), ['model.pt'], 'no temp file left behind');
  const ck = await loadCheckpointFile(path);
  assert.equal(ck.format, 'pt');
  assertSameTensors(sd, ck.stateDict);
  assert.deepEqual(ck.metadata.names, { 0: 'cat', 1: 'dog', 2: 'emu' });
  assert.equal(ck.metadata.nc, 3);
  assert.equal(ck.metadata.size, 's');
  assert.deepEqual(ck.metadata.config, { lr0: 0.01, epochs: 3, flags: [true, null] });
  // names as a dict with int keys is written as a Python dict {int: str}
  const top = readTorchCheckpoint(readFileSync(path), path) as Map<PyValue, PyValue>;
  assert.equal((top.get('names') as Map<PyValue, PyValue>).get(2), 'emu');
  assert.deepEqual([...top.keys()].slice(0, 3), ['model', 'schema_version', 'model_family']);
});

test('a bare state dict of 80 classes loads with the COCO names, another class count with class0...', async () => {
  const { stateDict } = await loadCheckpointFile(fixture('yolo9t_ref.pt'));
  const dir = mkdtempSync(join(tmpdir(), 'libreyolo-names-'));
  try {
    const bare = join(dir, 'bare.pt');
    await saveCheckpointPt(bare, stateDict);
    const m = await LibreYOLO(bare);
    try {
      assert.deepEqual([m.nc, m.names[0], m.names[79]], [80, 'person', 'toothbrush']);
    } finally {
      await m.close();
    }
    const fresh = createFreshModel('yolo9t', { nc: 3 });
    assert.deepEqual(fresh.names, { 0: 'class0', 1: 'class1', 2: 'class2' });
    assert.equal(createFreshModel('yolo9t').names[0], 'person');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('state dict selection: ema.module first, detect. -> head., head.dfl dropped, bare dicts', () => {
  const t = (v: number): HostTensor => ({ dtype: 'float32', dims: [1], data: Float32Array.from([v]) });
  const emaModule = new PyOrderedDict([['detect.cv2.0.weight', t(1)], ['detect.dfl.conv.weight', t(2)], ['backbone.x', t(3)]]);
  const bytes = writeTorchCheckpoint({
    ema: new Map<PyValue, PyValue>([['module', emaModule], ['updates', 10]]),
    model: new PyOrderedDict([['backbone.x', t(9)]]),
    optimizer: new Map<PyValue, PyValue>([['state', new Map()]]),
    epoch: 4, nc: 80,
  });
  const ck = parseCheckpoint(bytes, 'ema.pt');
  assert.deepEqual([...ck.stateDict.keys()], ['head.cv2.0.weight', 'backbone.x']);
  assert.equal(ck.stateDict.get('backbone.x')!.data[0], 3);
  assert.deepEqual(ck.metadata, { epoch: 4, nc: 80 });

  const order = (top: Record<string, HostTensor | number>) => parseCheckpoint(writeTorchCheckpoint(
    Object.fromEntries(Object.entries(top).map(([k, v]) => [k, typeof v === 'number' ? v : new PyOrderedDict([['w', v]])])),
  ), 'o.pt').stateDict.get('w')!.data[0];
  assert.equal(order({ ema_net: t(1), net: t(2), model: t(3), state_dict: t(4) }), 1);
  assert.equal(order({ state_dict: t(4), net: t(2), model: t(3) }), 2);
  assert.equal(order({ state_dict: t(4), model: t(3) }), 3);
  assert.equal(order({ state_dict: t(4) }), 4);

  const bare = parseCheckpoint(writeTorchCheckpoint(new PyOrderedDict([['a.weight', t(5)], ['head.dfl.conv.weight', t(6)]])), 'bare.pt');
  assert.deepEqual([...bare.stateDict.keys()], ['a.weight']);
  assert.deepEqual(bare.metadata, {});
});

test('safetensors round trip keeps dtypes, shapes, bytes and metadata', async () => {
  const sd = sampleTensors();
  const bytes = writeSafetensors(sd, { nc: '2', names: '{"0": "a", "1": "b"}', model_family: 'yolo9' });
  assert.equal(new DataView(bytes.buffer).getBigUint64(0, true) % 8n, 0n);
  const st = readSafetensors(bytes, 'rt.safetensors');
  assertSameTensors(sd, st.tensors);
  assert.deepEqual(st.metadata, { nc: '2', names: '{"0": "a", "1": "b"}', model_family: 'yolo9' });
  const p = join(tmp, 'w.safetensors');
  writeFileSync(p, bytes);
  const ck = await loadCheckpointFile(p);
  assert.equal(ck.format, 'safetensors');
  assert.deepEqual(ck.metadata, { nc: 2, names: { 0: 'a', 1: 'b' }, model_family: 'yolo9' });
  assertSameTensors(sd, ck.stateDict);
});

test('reads the reference safetensors fixture', () => {
  const path = fixture('yolo9t_ref_io.safetensors');
  const st = readSafetensors(readFileSync(path), path);
  assert.equal(st.tensors.size, 7);
  assert.match(st.metadata.note!, /eval-mode predictions/);
  assert.deepEqual(st.tensors.get('input_1x3x640x640')!.dims, [1, 3, 640, 640]);
  assert.deepEqual(st.tensors.get('predictions_1x3x640x640')!.dims, [1, 84, 8400]);
  assert.deepEqual(st.tensors.get('predictions_2x3x320x256')!.dims, [2, 84, 1680]);
  const x = st.tensors.get('input_1x3x640x640')!.data as Float32Array;
  assert.ok(x.every((v) => v >= 0 && v < 1), 'inputs are uniform in [0, 1)');
});

test('bad safetensors headers fail with model_load_failed', () => {
  const good = writeSafetensors(new Map([['a', zeros('float32', [2])]]));
  const withHeader = (json: string, data = 0) => {
    const h = Buffer.from(json);
    const b = new Uint8Array(8 + h.length + data);
    new DataView(b.buffer).setBigUint64(0, BigInt(h.length), true);
    b.set(h, 8);
    return b;
  };
  const cases: [Uint8Array, RegExp][] = [
    [good.subarray(0, 5), /shorter than/],
    [(() => { const b = good.slice(); new DataView(b.buffer).setBigUint64(0, 1n << 40n, true); return b; })(), /header length/],
    [withHeader('{"a": {"dtype": "F32", "shape": [2], '), /not valid UTF-8 JSON/],
    [withHeader('{"a": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 8]}}', 8), /unsupported dtype/],
    [withHeader('{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}', 8), /does not match its shape/],
    [withHeader('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', 4), /past the end/],
    [withHeader('{"__metadata__": {"nc": 3}}'), /not a string/],
  ];
  for (const [bytes, why] of cases) assert.throws(() => readSafetensors(bytes, 'bad.safetensors'), isLoadFailed('bad.safetensors', why));
});

test('self-referencing metadata is rejected instead of recursing forever', () => {
  // {'x': L} where L = [L]: EMPTY_DICT, 'x', EMPTY_LIST, BINPUT 0, BINGET 0, APPEND, SETITEM, STOP
  const pkl = Uint8Array.from([0x80, 0x02, 0x7d, 0x58, 1, 0, 0, 0, 0x78, 0x5d, 0x71, 0x00, 0x68, 0x00, 0x61, 0x73, 0x2e]);
  const zip = zipSync({ 'archive/data.pkl': pkl, 'archive/version': Buffer.from('3\n') }, { level: 0 });
  assert.throws(() => parseCheckpoint(zip, 'cycle.pt'), (e: unknown) => e instanceof LibreYOLOError && e.code === 'model_load_failed' && /cycle/.test(e.message));
});
