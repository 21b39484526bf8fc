import assert from 'node:assert/strict';
import { test } from 'node:test';
import { zipSync } from 'fflate';
import { LibreYOLOError } from '../../src/errors.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { dumpsTorchPickle, PyNamespace, PyOrderedDict, pyFloat, TorchDtype, unpickle, type PyValue, type StorageRequest } from '../../src/weights/pickle/index.ts';
import { readTorchCheckpoint } from '../../src/weights/torch-checkpoint.ts';

const hex = (s: string) => Uint8Array.from(Buffer.from(s, 'hex'));
const ascii = (s: string) => [...Buffer.from(s, 'latin1')];
const u32le = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];
const binunicode = (s: string) => [0x58, ...u32le(Buffer.byteLength(s)), ...Buffer.from(s)];

function expectUnsafe(fn: () => unknown, global: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof LibreYOLOError, `expected LibreYOLOError, got ${String(e)}`);
    assert.equal(e.code, 'unsafe_checkpoint');
    assert.equal(e.exitCode, 4);
    assert.match(e.message, new RegExp(global.replace('.', '\\.')));
    assert.match(e.message, /refused/i);
    assert.match(e.message, /only tensors and plain containers/i);
    assert.match(e.message, /re-save it .*plain state_dict/i);
    return true;
  });
}

test('refuses os.system before calling anything (hand-built protocol 2 pickle)', () => {
  // PROTO 2; GLOBAL 'os system'; BINUNICODE 'echo pwned'; TUPLE1; REDUCE; STOP
  const evil = Uint8Array.from([0x80, 0x02, 0x63, ...ascii('os\nsystem\n'), ...binunicode('echo pwned'), 0x85, 0x52, 0x2e]);
  expectUnsafe(() => unpickle(evil, { source: 'evil.pt' }), 'os.system');
  assert.throws(() => unpickle(evil, { source: 'evil.pt' }), /evil\.pt/);
});

test('refuses builtins.eval via STACK_GLOBAL (protocol 4) and posix.system', () => {
  const short = (s: string) => [0x8c, s.length, ...ascii(s)];
  const viaStack = Uint8Array.from([0x80, 0x04, ...short('builtins'), 0x94, ...short('eval'), 0x94, 0x93, ...short('1+1'), 0x85, 0x52, 0x2e]);
  expectUnsafe(() => unpickle(viaStack), 'builtins.eval');
  const py2 = Uint8Array.from([0x80, 0x02, 0x63, ...ascii('__builtin__\neval\n'), 0x2e]);
  expectUnsafe(() => unpickle(py2), 'builtins.eval');
  const posix = Uint8Array.from([0x80, 0x02, 0x63, ...ascii('posix\nsystem\n'), ...binunicode('id'), 0x85, 0x52, 0x2e]);
  expectUnsafe(() => unpickle(posix), 'posix.system');
});

test('a torch zip whose data.pkl references os.system is refused, naming the file', () => {
  const evil = Uint8Array.from([0x80, 0x02, 0x63, ...ascii('os\nsystem\n'), ...binunicode('rm -rf /'), 0x85, 0x52, 0x2e]);
  const zip = zipSync({ 'archive/data.pkl': evil, 'archive/version': Buffer.from('3\n') }, { level: 0 });
  expectUnsafe(() => readTorchCheckpoint(zip, '/tmp/evil.pt'), 'os.system');
  assert.throws(() => readTorchCheckpoint(zip, '/tmp/evil.pt'), /\/tmp\/evil\.pt/);
});

// The same object pickled by CPython 3.11 (pickle.dumps(obj, protocol=p)):
// {'a': [1, 2.5, 'x', b'yz', None, True, False], 3: (1, 2, 3, 4), 'big': 2**70, 'neg': -5,
//  'i32': -100000, 's': {7}, 'fs': frozenset([9]), 'u': 'hé世', 'e': b''}
const CPYTHON: Record<number, string> = {
  2: '80027d71002858010000006171015d7102284b014740040000000000005801000000787103635f636f646563730a656e636f64650a71045802000000797a710558060000006c6174696e3171068671075271084e8889654b03284b014b024b034b047471095803000000626967710a8a0900000000000000004058030000006e6567710b4afbffffff5803000000693332710c4a6079feff580100000073710d635f5f6275696c74696e5f5f0a7365740a710e5d710f4b0761857110527111580200000066737112635f5f6275696c74696e5f5f0a66726f7a656e7365740a71135d71144b09618571155271165801000000757117580600000068c3a9e4b89671185801000000657119635f5f6275696c74696e5f5f0a62797465730a711a2952711b752e',
  4: '80049580000000000000007d94288c0161945d94284b014740040000000000008c0178944302797a944e8889654b03284b014b024b034b0474948c03626967948a090000000000000000408c036e6567944afbffffff8c03693332944a6079feff8c0173948f94284b07908c02667394284b0991948c0175948c0668c3a9e4b896948c016594430094752e',
};

for (const [proto, bytes] of Object.entries(CPYTHON)) {
  test(`decodes a CPython protocol ${proto} pickle of plain containers`, () => {
    const v = unpickle(hex(bytes)) as Map<PyValue, PyValue>;
    assert.ok(v instanceof Map);
    assert.deepEqual(v.get('a'), [1, 2.5, 'x', Uint8Array.from([0x79, 0x7a]), null, true, false]);
    assert.deepEqual(v.get(3), [1, 2, 3, 4]); // int key stays a number
    assert.equal(v.get('3'), undefined);
    assert.equal(v.get('big'), 2n ** 70n);
    assert.equal(v.get('neg'), -5);
    assert.equal(v.get('i32'), -100000);
    assert.deepEqual(v.get('s'), new Set([7]));
    assert.deepEqual(v.get('fs'), new Set([9]));
    assert.equal(v.get('u'), 'hé世');
    assert.deepEqual(v.get('e'), new Uint8Array(0));
  });
}

test('truncated and malformed pickles fail with model_load_failed', () => {
  const good = hex(CPYTHON[4]!);
  for (const bad of [good.subarray(0, 40), Uint8Array.from([0x80, 0x02, 0xff]), Uint8Array.from([0x80, 0x02, 0x73, 0x2e])]) {
    assert.throws(() => unpickle(bad), (e: unknown) => e instanceof LibreYOLOError && e.code === 'model_load_failed');
  }
});

test('writer round-trips plain values through the reader', () => {
  const names = new Map<PyValue, PyValue>([[0, 'person'], [1, 'bicycle']]);
  const od = new PyOrderedDict([['x', 1], ['y', [1, 2]]]);
  const long = Array.from({ length: 2500 }, (_, i) => i); // crosses the 1000-item batches
  const obj = {
    ints: [0, 255, 256, 65535, 65536, -1, -(2 ** 31), 2 ** 31 - 1, 2 ** 31, 2 ** 53 - 1, -(2 ** 53) + 1],
    bigs: [2n ** 63n - 1n, -(2n ** 63n), 2n ** 100n],
    floats: [0.5, -1e300, 1e-310, Infinity, -Infinity],
    text: ['', 'ascii', 'hé世🙂'],
    flags: [true, false, null],
    names, od, long,
    bytes: Uint8Array.from([0, 127, 128, 255]),
    dtype: new TorchDtype('float16'),
    nested: { a: { b: { c: 'deep' } } },
  };
  const back = unpickle(dumpsTorchPickle(obj, () => assert.fail('no tensors here'))) as Map<PyValue, PyValue>;
  assert.ok(!(back instanceof PyOrderedDict));
  assert.deepEqual(back.get('ints'), obj.ints);
  assert.deepEqual(back.get('bigs'), [2n ** 63n - 1n, -(2n ** 63n), 2n ** 100n]);
  assert.deepEqual(back.get('floats'), obj.floats);
  assert.deepEqual(back.get('text'), obj.text);
  assert.deepEqual(back.get('flags'), obj.flags);
  assert.deepEqual(back.get('names'), names);
  assert.ok(back.get('od') instanceof PyOrderedDict);
  assert.deepEqual([...(back.get('od') as Map<PyValue, PyValue>)], [...od]);
  assert.deepEqual(back.get('long'), long);
  assert.deepEqual(back.get('bytes'), obj.bytes);
  assert.deepEqual(back.get('dtype'), new TorchDtype('float16'));
  assert.equal(((back.get('nested') as Map<PyValue, PyValue>).get('a') as Map<PyValue, PyValue>).get('b') instanceof Map, true);
  const nan = unpickle(dumpsTorchPickle([NaN], () => assert.fail())) as number[];
  assert.ok(Number.isNaN(nan[0]));
});

test('PyFloat writes whole numbers as Python floats (BINFLOAT), plain numbers as ints', () => {
  const bytes = dumpsTorchPickle([pyFloat(0), 0, pyFloat([1, 2.5])], () => assert.fail());
  const hex = Buffer.from(bytes).toString('hex');
  assert.ok(hex.includes('470000000000000000'), `0.0 as BINFLOAT: ${hex}`);
  assert.ok(hex.includes('473ff0000000000000'), `1.0 as BINFLOAT: ${hex}`);
  assert.ok(hex.includes('4b00'), `0 as BININT1: ${hex}`);
  assert.deepEqual(unpickle(bytes), [0, 0, [1, 2.5]]);
});

test('writer rejects what weights-only torch.load could not read', () => {
  assert.throws(() => dumpsTorchPickle({ f: () => 1 } as never, () => assert.fail()), TypeError);
  const cyc: Record<string, unknown> = {};
  cyc.self = cyc;
  assert.throws(() => dumpsTorchPickle(cyc as never, () => assert.fail()), /cyclic/);
});

/** Pickle bytes for _rebuild_tensor_v2 over one storage, built opcode by opcode. */
function tensorPickle(storageClass: string, numelStorage: number, offset: number, size: number[], stride: number[]): Uint8Array {
  const int = (n: number) => (n < 256 ? [0x4b, n] : [0x4d, n & 0xff, n >> 8]);
  const tuple = (xs: number[]) => [0x28, ...xs.flatMap(int), 0x74];
  return Uint8Array.from([
    0x80, 0x02, 0x63, ...ascii('torch._utils\n_rebuild_tensor_v2\n'),
    0x28, // args
    0x28, ...binunicode('storage'), 0x63, ...ascii(`torch\n${storageClass}\n`), ...binunicode('0'), ...binunicode('cpu'), ...int(numelStorage), 0x74, 0x51,
    ...int(offset), ...tuple(size), ...tuple(stride), 0x89,
    0x63, ...ascii('collections\nOrderedDict\n'), 0x29, 0x52,
    0x74, 0x52, 0x2e,
  ]);
}

test('rebuilds storage offsets and non-contiguous strides as contiguous tensors', () => {
  const storage = new Float32Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const load = (req: StorageRequest) => {
    assert.deepEqual(req, { key: '0', dtype: 'float32', numel: 10, location: 'cpu' });
    return new Uint8Array(storage.buffer);
  };
  // a [3,2] transpose of the [2,3] block starting at element 1: rows of the original are columns here
  const t = unpickle(tensorPickle('FloatStorage', 10, 1, [3, 2], [1, 3]), { loadStorage: load }) as HostTensor;
  assert.deepEqual(t.dims, [3, 2]);
  assert.deepEqual([...t.data], [1, 4, 2, 5, 3, 6]);
  const view = unpickle(tensorPickle('FloatStorage', 10, 4, [2, 2], [2, 1]), { loadStorage: load }) as HostTensor;
  assert.deepEqual([...view.data], [4, 5, 6, 7]);
  assert.throws(() => unpickle(tensorPickle('FloatStorage', 10, 8, [2, 2], [2, 1]), { loadStorage: load }), /past the end/);
});

test('storage classes map to dtypes (half, bfloat16, int64, bool)', () => {
  const cases: [string, string, Uint8Array, unknown[]][] = [
    ['HalfStorage', 'float16', new Uint8Array(Uint16Array.from([0x3c00, 0xc000]).buffer), [0x3c00, 0xc000]],
    ['BFloat16Storage', 'bfloat16', new Uint8Array(Uint16Array.from([0x3f80, 0x4000]).buffer), [0x3f80, 0x4000]],
    ['LongStorage', 'int64', new Uint8Array(BigInt64Array.from([-3n, 5n]).buffer), [-3n, 5n]],
    ['BoolStorage', 'bool', Uint8Array.from([1, 0]), [1, 0]],
  ];
  for (const [cls, dtype, bytes, values] of cases) {
    const t = unpickle(tensorPickle(cls, 2, 0, [2], [1]), { loadStorage: () => bytes }) as HostTensor;
    assert.equal(t.dtype, dtype);
    assert.deepEqual([...t.data], values);
  }
});

test('argparse.Namespace (upstream RF-DETR `args`) reads as an inert attribute bag, written and read back', () => {
  const args = new PyNamespace([['num_queries', 300], ['group_detr', 13], ['resolution', 384], ['lr', pyFloat(1e-4) as never], ['encoder', 'dinov2_windowed_small']]);
  const bytes = dumpsTorchPickle({ args, epoch: 3 }, () => ({ key: '0', numel: 0 }));
  // Python's own protocol-2 spelling: GLOBAL argparse Namespace, EMPTY_TUPLE, NEWOBJ, a dict, BUILD.
  assert.ok(Buffer.from(bytes).includes(Buffer.from('cargparse\nNamespace\n')));
  const top = unpickle(bytes) as Map<PyValue, PyValue>;
  const back = top.get('args');
  assert.ok(back instanceof PyNamespace);
  assert.equal(back.get('num_queries'), 300);
  assert.equal(back.get('group_detr'), 13);
  assert.equal(back.get('resolution'), 384);
  assert.equal(back.get('encoder'), 'dinov2_windowed_small');
  assert.equal(top.get('epoch'), 3);
});
