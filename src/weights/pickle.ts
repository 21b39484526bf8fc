/**
 * A safe Python-pickle codec for PyTorch checkpoints.
 *
 * Reading: a stack machine over the opcodes torch emits (protocols 1-5; `torch.save(...,
 * pickle_protocol=1)` writes booleans and big ints as text INT/LONG lines). Nothing is ever
 * executed from the file: every GLOBAL is looked up in a fixed allow-list of tensor rebuilders and
 * plain containers, and anything else is refused at the GLOBAL opcode itself, before a REDUCE could
 * call it.
 *
 * Value mapping (Python -> JS):
 *   None -> null, bool -> boolean, float -> number, int -> number (bigint beyond 2^53),
 *   str -> string, bytes/bytearray -> Uint8Array, list and tuple -> Array, set/frozenset -> Set,
 *   dict -> Map, collections.OrderedDict -> PyOrderedDict (a Map subclass), tensor -> HostTensor,
 *   torch.Size -> number[], torch.device -> string ('cpu', 'cuda:0'), torch.<dtype> -> TorchDtype,
 *   numpy scalars -> number | bigint | boolean.
 * Dicts are Maps so that key types survive: `names = {0: 'person'}` decodes to a Map whose key is
 * the number 0, so `names.get(0)` works and `names.get('0')` does not. Insertion order is kept.
 * Tensors are contiguous; when the layout allows they are views of their storage's bytes, so tensors
 * that shared a storage in Python share memory here too. The tensors rebuilt from a pickle may add up
 * to at most `maxTensorExpansion` times the bytes of the storages it loads (plus 64 MiB), so views
 * (stride 0, or many views of one storage) cannot multiply memory. The `_metadata` attribute torch attaches to
 * state dicts (BUILD on an OrderedDict) is dropped.
 *
 * Writing (`dumpsTorchPickle`): protocol 2 with the opcode structure `torch.save` produces (minus
 * that `_metadata`, which load_state_dict does not need), so `torch.load(weights_only=True)` accepts it.
 */

import { LibreYOLOError } from '../errors.ts';
import { BYTES_PER_ELEMENT, f16ToF32, fromBytes, numel, zeros, type DType, type HostTensor } from '../graph/tensor.ts';
import { describeBytes, describeLimit, limit, raiseAdvice, RATIO_ALLOWANCE_BYTES } from '../util/limits.ts';

// ---------------------------------------------------------------------------------------------
// Value types

/** collections.OrderedDict; a plain Python dict decodes to (and is written from) a plain Map. */
export class PyOrderedDict extends Map<PyValue, PyValue> {}

/**
 * An `argparse.Namespace` (upstream RF-DETR checkpoints pickle their training `args` as one): an
 * inert bag of attributes, filled by BUILD from its `__dict__`; nothing of it is executed.
 */
export class PyNamespace extends Map<PyValue, PyValue> {}

/** A torch dtype object such as `torch.float16` (appears in optimizer state or metadata). */
export class TorchDtype {
  constructor(readonly name: string) {}
}

export type PyValue =
  | null | boolean | number | bigint | string | Uint8Array
  | PyValue[] | Map<PyValue, PyValue> | Set<PyValue> | HostTensor | TorchDtype;

export function isHostTensor(v: unknown): v is HostTensor {
  if (typeof v !== 'object' || v === null) return false;
  const t = v as Partial<HostTensor>;
  return typeof t.dtype === 'string' && Object.hasOwn(BYTES_PER_ELEMENT, t.dtype) && Array.isArray(t.dims) && ArrayBuffer.isView(t.data);
}

/** Storage classes as torch pickles them (the class names the element type). */
export const STORAGE_CLASS_OF: Record<DType, string> = {
  float32: 'FloatStorage', float16: 'HalfStorage', bfloat16: 'BFloat16Storage', float64: 'DoubleStorage',
  int64: 'LongStorage', int32: 'IntStorage', int16: 'ShortStorage', int8: 'CharStorage', uint8: 'ByteStorage', bool: 'BoolStorage',
};

/** A storage request decoded from a torch persistent id ('storage', <class>, key, location, numel). */
export interface StorageRequest {
  key: string;
  dtype: DType;
  numel: number;
  location: string;
}

export interface UnpickleOptions {
  /** Returns the little-endian bytes of storage `key` (at least numel * element size). */
  loadStorage?: (req: StorageRequest) => Uint8Array;
  /** Names the file in error messages. */
  source?: string;
  /** Tensor bytes allowed per storage byte loaded (beyond 64 MiB); default 2. */
  maxTensorExpansion?: number;
  /** Values (containers, strings, calls, ...) the pickle may create; default the pickleObjects limit. */
  maxObjects?: number;
}

/** Bytes of storage loaded and of tensors rebuilt from them, for the expansion cap. */
class TensorBudget {
  storageBytes = 0;
  tensorBytes = 0;
  constructor(readonly expansion: number, readonly source: string) {}
  charge(bytes: number, what: string): void {
    this.tensorBytes += bytes;
    const allowed = RATIO_ALLOWANCE_BYTES + this.expansion * this.storageBytes;
    if (this.tensorBytes > allowed) {
      throw new LibreYOLOError('model_load_failed',
        `Cannot load ${this.source}: its tensors would take ${describeBytes(this.tensorBytes)} (${what} is the one that passes the limit), ` +
          `but the file holds only ${describeBytes(this.storageBytes)} of storage; views that repeat storage (stride 0, or one storage viewed many times) may add up to ` +
          `${describeLimit('tensorExpansion', this.expansion)} times the storage plus 64 MiB. The file is crafted or damaged. If you trust it: ${raiseAdvice('tensorExpansion')}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Allow-list of globals

/** A resolved, allow-listed global. `call` is present only for things REDUCE/NEWOBJ may invoke. */
class SafeGlobal {
  constructor(
    readonly qualname: string,
    readonly call?: (args: unknown[]) => unknown,
    readonly storageDtype?: DType,
  ) {}
}

/** Loaded storage: bytes plus what the persistent id said about them. */
class TorchStorage {
  constructor(readonly dtype: DType, readonly numel: number, readonly bytes: Uint8Array) {}
}

/** numpy dtype, only as far as numpy scalar decoding needs it. */
class NumpyDtype {
  byteorder = '<';
  constructor(readonly str: string) {}
}

const TORCH_DTYPE_GLOBALS: Record<string, DType> = {
  float32: 'float32', float: 'float32', float16: 'float16', half: 'float16', bfloat16: 'bfloat16',
  float64: 'float64', double: 'float64', int64: 'int64', long: 'int64', int32: 'int32', int: 'int32',
  int16: 'int16', short: 'int16', int8: 'int8', uint8: 'uint8', bool: 'bool',
};

function buildAllowList(source: string, budget: TensorBudget): Map<string, SafeGlobal | TorchDtype> {
  const m = new Map<string, SafeGlobal | TorchDtype>();
  const fn = (name: string, call: (args: unknown[]) => unknown) => m.set(name, new SafeGlobal(name, call));
  const bad = (what: string) => corrupt(source, what);

  fn('collections.OrderedDict', (args) => {
    const d = new PyOrderedDict();
    const items = args[0];
    if (Array.isArray(items)) for (const kv of items) if (Array.isArray(kv) && kv.length === 2) d.set(kv[0] as PyValue, kv[1] as PyValue);
    return d;
  });
  fn('torch._utils._rebuild_tensor_v2', (args) => rebuildTensor(args, source, budget));
  fn('torch._utils._rebuild_tensor', (args) => rebuildTensor(args, source, budget));
  // Parameters rebuild to their data; requires_grad and hooks mean nothing here.
  fn('torch._utils._rebuild_parameter', (args) => expectTensor(args[0], source));
  fn('torch._utils._rebuild_parameter_with_state', (args) => expectTensor(args[0], source));
  // Tensor subclasses: (func, new_type, args, state). func is itself an allow-listed global.
  fn('torch._tensor._rebuild_from_type_v2', (args) => {
    const [func, , inner] = args;
    if (!(func instanceof SafeGlobal) || !func.call || !Array.isArray(inner)) throw bad('bad _rebuild_from_type_v2 arguments');
    return func.call(inner);
  });
  m.set('torch.Tensor', new SafeGlobal('torch.Tensor'));
  m.set('torch.nn.parameter.Parameter', new SafeGlobal('torch.nn.parameter.Parameter'));
  for (const [dtype, cls] of Object.entries(STORAGE_CLASS_OF) as [DType, string][]) {
    m.set(`torch.${cls}`, new SafeGlobal(`torch.${cls}`, undefined, dtype));
  }
  for (const [name, dtype] of Object.entries(TORCH_DTYPE_GLOBALS)) m.set(`torch.${name}`, new TorchDtype(dtype));
  fn('torch.Size', (args) => (Array.isArray(args[0]) ? [...args[0]] : []));
  fn('torch.device', (args) => (args[1] === undefined || args[1] === null ? String(args[0]) : `${String(args[0])}:${String(args[1])}`));
  // Protocol 2 spells bytes as _codecs.encode(str, 'latin1').
  fn('_codecs.encode', (args) => {
    const [s, enc] = args;
    if (typeof s !== 'string') throw bad('_codecs.encode expects a str');
    const e = String(enc ?? 'utf-8').toLowerCase().replace('_', '-');
    if (e === 'latin1' || e === 'latin-1' || e === 'iso-8859-1') return Uint8Array.from(s, (c) => c.charCodeAt(0) & 0xff);
    if (e === 'utf-8' || e === 'utf8') return new TextEncoder().encode(s);
    throw bad(`_codecs.encode with unsupported encoding ${e}`);
  });
  // Protocol 2 writes b'' as builtins.bytes(); bytearray likewise wraps bytes.
  const toBytesArg = (args: unknown[]) => {
    if (args.length === 0) return new Uint8Array(0);
    if (args[0] instanceof Uint8Array) return args[0].slice();
    throw bad('bytes() of a non-bytes value');
  };
  fn('builtins.bytes', toBytesArg);
  fn('builtins.bytearray', toBytesArg);
  fn('builtins.set', (args) => new Set(Array.isArray(args[0]) ? (args[0] as PyValue[]) : []));
  fn('builtins.frozenset', (args) => new Set(Array.isArray(args[0]) ? (args[0] as PyValue[]) : []));
  for (const mod of ['numpy.core.multiarray', 'numpy._core.multiarray']) fn(`${mod}.scalar`, (args) => numpyScalar(args, source));
  fn('numpy.dtype', (args) => new NumpyDtype(String(args[0])));
  fn('argparse.Namespace', () => new PyNamespace());
  return m;
}

function resolveGlobal(allow: Map<string, SafeGlobal | TorchDtype>, module: string, name: string, source: string): SafeGlobal | TorchDtype {
  const mod = module === '__builtin__' ? 'builtins' : module; // protocol 2 writes Python 2 module names
  const qualname = `${mod}.${name}`;
  const hit = allow.get(qualname);
  if (hit) return hit;
  const advice = "If you trust its origin, re-save it in Python as a plain state_dict, e.g. torch.save({'model': model.state_dict()}, 'clean.pt').";
  throw new LibreYOLOError(
    'unsafe_checkpoint',
    `Refused to load ${source}: it references the Python global '${qualname}'. ` +
      'Only tensors and plain containers (dict, list, tuple, str, numbers) are allowed in a checkpoint, ' +
      `so the file was refused before anything in it could run. ${advice}`,
    { suggestion: advice },
  );
}

function corrupt(source: string, what: string): LibreYOLOError {
  return new LibreYOLOError('model_load_failed', `Could not read ${source}: corrupt pickle data (${what}). Re-download or re-save the file.`);
}

function expectTensor(v: unknown, source: string): HostTensor {
  if (!isHostTensor(v)) throw corrupt(source, 'parameter without tensor data');
  return v;
}

// ---------------------------------------------------------------------------------------------
// Tensor rebuild

function intList(v: unknown): number[] | null {
  if (!Array.isArray(v)) return null;
  const out: number[] = [];
  for (const x of v) {
    const n = typeof x === 'bigint' ? Number(x) : x;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) return null;
    out.push(n);
  }
  return out;
}

/** _rebuild_tensor_v2(storage, offset, size, stride, ...): materialise as a contiguous HostTensor. */
function rebuildTensor(args: unknown[], source: string, budget: TensorBudget): HostTensor {
  const [storage, offsetRaw] = args;
  const size = intList(args[2]);
  const stride = intList(args[3]);
  const offset = typeof offsetRaw === 'bigint' ? Number(offsetRaw) : offsetRaw;
  if (!(storage instanceof TorchStorage)) throw corrupt(source, 'tensor without a storage');
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0 || !size || !stride || size.length !== stride.length) {
    throw corrupt(source, 'bad tensor offset/size/stride');
  }
  const { dtype } = storage;
  const n = numel(size);
  if (n === 0) return zeros(dtype, size);
  let last = offset; // highest element index touched
  for (let d = 0; d < size.length; d++) last += (size[d]! - 1) * stride[d]!;
  const es = BYTES_PER_ELEMENT[dtype];
  if (last >= storage.numel || storage.bytes.byteLength < (last + 1) * es) {
    throw corrupt(source, `tensor ${dtype}[${size.join(',')}] reaches past the end of its storage`);
  }
  // Charged before anything is copied: a view costs nothing here but its full size downstream.
  budget.charge(n * es, `tensor ${dtype}[${size.join(',')}]`);
  if (isContiguous(size, stride)) return fromBytes(dtype, size, storage.bytes.subarray(offset * es, (offset + n) * es));
  // Non-contiguous views (rare in state dicts): gather element by element in row-major order.
  // An expanded view (stride 0) could claim far more elements than its storage holds; cap it.
  if (n > Math.max(storage.numel, 1 << 24)) throw corrupt(source, `strided tensor of ${n} elements over a storage of ${storage.numel}`);
  const src = storage.bytes;
  const out = new Uint8Array(n * es);
  const idx = new Array<number>(size.length).fill(0);
  let at = offset;
  for (let k = 0; k < n; k++) {
    const s = at * es;
    for (let b = 0; b < es; b++) out[k * es + b] = src[s + b]!;
    for (let d = size.length - 1; d >= 0; d--) {
      idx[d]!++;
      at += stride[d]!;
      if (idx[d]! < size[d]!) break;
      at -= stride[d]! * size[d]!;
      idx[d] = 0;
    }
  }
  return fromBytes(dtype, size, out);
}

function isContiguous(size: number[], stride: number[]): boolean {
  let expect = 1;
  for (let d = size.length - 1; d >= 0; d--) {
    if (size[d] !== 1 && stride[d] !== expect) return false;
    expect *= size[d]!;
  }
  return true;
}

const NUMPY_KINDS: Record<string, (v: DataView, le: boolean) => number | bigint | boolean> = {
  f2: (v, le) => f16ToF32(v.getUint16(0, le)), f4: (v, le) => v.getFloat32(0, le), f8: (v, le) => v.getFloat64(0, le),
  i1: (v) => v.getInt8(0), i2: (v, le) => v.getInt16(0, le), i4: (v, le) => v.getInt32(0, le), i8: (v, le) => small(v.getBigInt64(0, le)),
  u1: (v) => v.getUint8(0), u2: (v, le) => v.getUint16(0, le), u4: (v, le) => v.getUint32(0, le), u8: (v, le) => small(v.getBigUint64(0, le)),
  b1: (v) => v.getUint8(0) !== 0,
};


/** numpy.core.multiarray.scalar(dtype, raw bytes): metadata saved as np.float64 etc. */
function numpyScalar(args: unknown[], source: string): number | bigint | boolean {
  const [dt, raw] = args;
  if (!(dt instanceof NumpyDtype) || !(raw instanceof Uint8Array)) throw corrupt(source, 'bad numpy scalar');
  const decode = NUMPY_KINDS[dt.str.replace(/^[<>|=]/, '')];
  if (!decode) throw corrupt(source, `unsupported numpy scalar dtype ${dt.str}`);
  return decode(new DataView(raw.buffer, raw.byteOffset, raw.byteLength), dt.byteorder !== '>');
}

function small(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

// ---------------------------------------------------------------------------------------------
// Reader

const utf8 = new TextDecoder('utf-8');

/**
 * Opcodes that allocate a JS object (container, string, bytes, bigint, call result, mark frame).
 * A pickle is a program: two bytes (EMPTY_LIST, APPEND) make a list, so a few MB can ask for
 * gigabytes of small objects; these are counted against the pickleObjects limit.
 */
const ALLOCATES = new Uint8Array(256);
for (const op of [0x7d, 0x5d, 0x29, 0x8f, 0x74, 0x6c, 0x85, 0x86, 0x87, 0x91, 0x64, 0x58, 0x8d, 0x8c, 0x54, 0x55, 0x42, 0x43, 0x8e,
  0x96, 0x8a, 0x8b, 0x4c, 0x52, 0x81, 0x92, 0x51, 0x28]) ALLOCATES[op] = 1;

/** Longest LONG1/LONG4 integer accepted, in bytes (LONG1 is at most 255 anyway). */
const MAX_LONG_BYTES = 4096;

/** Valid pickle opcodes this reader refuses, named for the message. */
const UNSUPPORTED_OPCODES: Record<number, string> = {
  0x53: "protocol-0 STRING ('S')", 0x56: "protocol-0 UNICODE ('V')", 0x50: "protocol-0 PERSID ('P')",
  0x69: "INST ('i')", 0x6f: "OBJ ('o')", 0x82: 'EXT1', 0x83: 'EXT2', 0x84: 'EXT4',
  0x97: 'NEXT_BUFFER (out-of-band buffers)', 0x98: 'READONLY_BUFFER (out-of-band buffers)',
};

/** Decodes a pickle; tensors come back as HostTensor. Throws LibreYOLOError on unsafe or corrupt data. */
export function unpickle(bytes: Uint8Array, options: UnpickleOptions = {}): PyValue {
  const source = options.source ?? 'pickle data';
  const budget = new TensorBudget(options.maxTensorExpansion ?? 2, source);
  const allow = buildAllowList(source, budget);
  const storages = new Map<string, TorchStorage>(); // one per key, however often the pickle names it
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const memo = new Map<number, unknown>();
  const metastack: unknown[][] = [];
  let stack: unknown[] = [];
  let pos = 0;

  const need = (n: number) => {
    if (n < 0 || pos + n > bytes.length) throw corrupt(source, `unexpected end of data at byte ${pos}`);
    const at = pos;
    pos += n;
    return at;
  };
  const u8 = () => bytes[need(1)]!;
  const u16 = () => view.getUint16(need(2), true);
  const u32 = () => view.getUint32(need(4), true);
  const u64 = () => {
    const v = view.getBigUint64(need(8), true);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw corrupt(source, 'length too large');
    return Number(v);
  };
  const raw = (n: number) => bytes.subarray(need(n), pos);
  const line = () => {
    const end = bytes.indexOf(0x0a, pos);
    if (end < 0) throw corrupt(source, 'unterminated text line');
    const s = utf8.decode(bytes.subarray(pos, end));
    pos = end + 1;
    return s;
  };
  const latin1 = (b: Uint8Array) => Array.from(b, (c) => String.fromCharCode(c)).join('');
  const pop = () => {
    if (stack.length === 0) throw corrupt(source, `stack underflow at byte ${pos}`);
    return stack.pop();
  };
  const top = () => {
    if (stack.length === 0) throw corrupt(source, `stack underflow at byte ${pos}`);
    return stack[stack.length - 1];
  };
  const popMark = () => {
    const items = stack;
    const prev = metastack.pop();
    if (!prev) throw corrupt(source, 'missing MARK');
    stack = prev;
    return items;
  };
  const getMemo = (i: number) => {
    if (!memo.has(i)) throw corrupt(source, `memo key ${i} missing`);
    return memo.get(i);
  };
  const intFromLE = (b: Uint8Array) => {
    if (b.length === 0) return 0;
    let v = 0n;
    for (let i = b.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]!);
    if (b[b.length - 1]! & 0x80) v -= 1n << BigInt(8 * b.length);
    return small(v);
  };
  const asMap = (v: unknown) => {
    if (!(v instanceof Map)) throw corrupt(source, 'SETITEM on a non-dict');
    return v as Map<unknown, unknown>;
  };
  const asList = (v: unknown) => {
    if (!Array.isArray(v)) throw corrupt(source, 'APPEND on a non-list');
    return v as unknown[];
  };
  const invoke = (callee: unknown, args: unknown) => {
    if (!(callee instanceof SafeGlobal) || !callee.call) throw corrupt(source, 'call of a non-callable object');
    if (!Array.isArray(args)) throw corrupt(source, 'call arguments are not a tuple');
    return callee.call(args);
  };
  const persistent = (pid: unknown) => {
    if (!Array.isArray(pid) || pid[0] !== 'storage' || pid.length < 5) throw corrupt(source, 'unsupported persistent id');
    const [, cls, key, location, count] = pid;
    if (!(cls instanceof SafeGlobal) || !cls.storageDtype) throw corrupt(source, 'persistent id without a storage class');
    const n = typeof count === 'bigint' ? Number(count) : count;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw corrupt(source, 'bad storage size');
    if (!options.loadStorage) throw corrupt(source, 'tensor storage outside a checkpoint archive');
    const known = storages.get(String(key));
    if (known) {
      if (known.dtype !== cls.storageDtype || known.numel !== n) throw corrupt(source, `storage ${String(key)} is described twice with different types or sizes`);
      return known;
    }
    const req: StorageRequest = { key: String(key), dtype: cls.storageDtype, numel: n, location: String(location) };
    const storage = new TorchStorage(req.dtype, n, options.loadStorage(req));
    storages.set(req.key, storage);
    budget.storageBytes += n * BYTES_PER_ELEMENT[req.dtype];
    return storage;
  };
  // Protocol 0/1 text integers: INT "I<decimal>\n" (I00/I01 are False/True), LONG "L<decimal>L\n".
  const textInt = (s: string, long: boolean) => {
    const digits = long && s.endsWith('L') ? s.slice(0, -1) : s;
    if (!/^[+-]?\d{1,400}$/.test(digits.trim())) throw corrupt(source, `bad text integer ${JSON.stringify(s.slice(0, 40))}`);
    if (!long && (digits === '00' || digits === '01')) return digits === '01';
    return small(BigInt(digits.trim()));
  };

  const maxObjects = options.maxObjects ?? limit('pickleObjects');
  let objects = 0;
  for (;;) {
    const op = u8();
    if (ALLOCATES[op] && ++objects > maxObjects) {
      throw new LibreYOLOError('model_load_failed',
        `Cannot load ${source}: its pickle creates more than ${maxObjects} objects (at byte ${pos - 1}); a checkpoint needs about 20 per tensor. ` +
          `The file is crafted or damaged. If you trust it: ${raiseAdvice('pickleObjects')}`);
    }
    switch (op) {
      case 0x80: { // PROTO
        const v = u8();
        if (v > 5) throw corrupt(source, `unsupported pickle protocol ${v}`);
        break;
      }
      case 0x95: need(8); break; // FRAME: framing is only a buffering hint
      case 0x2e: return pop() as PyValue; // STOP
      case 0x63: { // GLOBAL
        const module = line();
        const name = line();
        stack.push(resolveGlobal(allow, module, name, source));
        break;
      }
      case 0x93: { // STACK_GLOBAL
        const name = pop();
        const module = pop();
        if (typeof module !== 'string' || typeof name !== 'string') throw corrupt(source, 'STACK_GLOBAL needs strings');
        stack.push(resolveGlobal(allow, module, name, source));
        break;
      }
      case 0x71: memo.set(u8(), top()); break; // BINPUT
      case 0x72: memo.set(u32(), top()); break; // LONG_BINPUT
      case 0x94: memo.set(memo.size, top()); break; // MEMOIZE
      case 0x68: stack.push(getMemo(u8())); break; // BINGET
      case 0x6a: stack.push(getMemo(u32())); break; // LONG_BINGET
      case 0x28: metastack.push(stack); stack = []; break; // MARK
      case 0x30: pop(); break; // POP
      case 0x31: popMark(); break; // POP_MARK
      case 0x32: stack.push(top()); break; // DUP
      case 0x7d: stack.push(new Map()); break; // EMPTY_DICT
      case 0x5d: stack.push([]); break; // EMPTY_LIST
      case 0x29: stack.push([]); break; // EMPTY_TUPLE
      case 0x8f: stack.push(new Set()); break; // EMPTY_SET
      // `stack` is reassigned by popMark, so take the items before touching it.
      case 0x74: case 0x6c: { const items = popMark(); stack.push(items); break; } // TUPLE, LIST
      case 0x85: stack.push([pop()]); break; // TUPLE1
      case 0x86: { const b = pop(); const a = pop(); stack.push([a, b]); break; } // TUPLE2
      case 0x87: { const c = pop(); const b = pop(); const a = pop(); stack.push([a, b, c]); break; } // TUPLE3
      case 0x91: { const items = popMark(); stack.push(new Set(items)); break; } // FROZENSET
      case 0x64: { // DICT
        const items = popMark();
        const d = new Map();
        for (let i = 0; i + 1 < items.length; i += 2) d.set(items[i], items[i + 1]);
        stack.push(d);
        break;
      }
      case 0x73: { const v = pop(); const k = pop(); asMap(top()).set(k, v); break; } // SETITEM
      case 0x75: { // SETITEMS
        const items = popMark();
        const d = asMap(top());
        if (items.length % 2) throw corrupt(source, 'odd SETITEMS');
        for (let i = 0; i < items.length; i += 2) d.set(items[i], items[i + 1]);
        break;
      }
      case 0x61: { const v = pop(); asList(top()).push(v); break; } // APPEND
      case 0x65: { const items = popMark(); const l = asList(top()); for (const it of items) l.push(it); break; } // APPENDS (no spread: lists can be long)
      case 0x90: { // ADDITEMS
        const items = popMark();
        const s = top();
        if (!(s instanceof Set)) throw corrupt(source, 'ADDITEMS on a non-set');
        for (const it of items) s.add(it);
        break;
      }
      case 0x4a: stack.push(view.getInt32(need(4), true)); break; // BININT
      case 0x4b: stack.push(u8()); break; // BININT1
      case 0x4d: stack.push(u16()); break; // BININT2
      case 0x8a: stack.push(intFromLE(raw(u8()))); break; // LONG1
      case 0x8b: { // LONG4
        const n = view.getInt32(need(4), true);
        if (n < 0) throw corrupt(source, 'negative LONG4 length');
        // Decoding is quadratic in the length; no checkpoint value needs more than a few words.
        if (n > MAX_LONG_BYTES) throw corrupt(source, `an integer of ${n} bytes`);
        stack.push(intFromLE(raw(n)));
        break;
      }
      case 0x47: stack.push(view.getFloat64(need(8), false)); break; // BINFLOAT (big-endian)
      case 0x49: stack.push(textInt(line(), false)); break; // INT (protocols 0-1)
      case 0x4c: stack.push(textInt(line(), true)); break; // LONG (protocols 0-1)
      case 0x46: { // FLOAT (protocol 0 text)
        const t = line().trim();
        const v = Number(t);
        if (t === '' || (Number.isNaN(v) && !/^[+-]?nan$/i.test(t))) throw corrupt(source, `bad text float ${JSON.stringify(t.slice(0, 40))}`);
        stack.push(v);
        break;
      }
      case 0x70: { // PUT (protocol 0 text memo index)
        const i = Number(line());
        if (!Number.isSafeInteger(i) || i < 0) throw corrupt(source, 'bad PUT index');
        memo.set(i, top());
        break;
      }
      case 0x67: { // GET
        const i = Number(line());
        if (!Number.isSafeInteger(i) || i < 0) throw corrupt(source, 'bad GET index');
        stack.push(getMemo(i));
        break;
      }
      case 0x58: stack.push(utf8.decode(raw(u32()))); break; // BINUNICODE
      case 0x8d: stack.push(utf8.decode(raw(u64()))); break; // BINUNICODE8
      case 0x8c: stack.push(utf8.decode(raw(u8()))); break; // SHORT_BINUNICODE
      case 0x54: { // BINSTRING (Python 2 str): latin-1, as torch's loader decodes it
        const n = view.getInt32(need(4), true);
        stack.push(latin1(raw(n)));
        break;
      }
      case 0x55: stack.push(latin1(raw(u8()))); break; // SHORT_BINSTRING
      case 0x42: stack.push(raw(u32()).slice()); break; // BINBYTES
      case 0x43: stack.push(raw(u8()).slice()); break; // SHORT_BINBYTES
      case 0x8e: stack.push(raw(u64()).slice()); break; // BINBYTES8
      case 0x96: stack.push(raw(u64()).slice()); break; // BYTEARRAY8
      case 0x4e: stack.push(null); break; // NONE
      case 0x88: stack.push(true); break; // NEWTRUE
      case 0x89: stack.push(false); break; // NEWFALSE
      case 0x52: { const args = pop(); const fn = pop(); stack.push(invoke(fn, args)); break; } // REDUCE
      case 0x81: { const args = pop(); const cls = pop(); stack.push(invoke(cls, args)); break; } // NEWOBJ
      case 0x92: { // NEWOBJ_EX
        const kwargs = pop();
        const args = pop();
        const cls = pop();
        if (!(kwargs instanceof Map) || kwargs.size > 0) throw corrupt(source, 'NEWOBJ_EX with keyword arguments');
        stack.push(invoke(cls, args));
        break;
      }
      case 0x62: { // BUILD: only the state torch attaches to dicts/tensors (ignored) and numpy dtypes
        const state = pop();
        const inst = top();
        if (inst instanceof NumpyDtype) {
          if (Array.isArray(state) && typeof state[1] === 'string') inst.byteorder = state[1];
        } else if (inst instanceof PyNamespace) {
          if (!(state instanceof Map)) throw corrupt(source, 'Namespace state is not a dict');
          for (const [k, v] of state) inst.set(k, v);
        } else if (!(inst instanceof Map) && !isHostTensor(inst)) {
          throw corrupt(source, 'BUILD on an unsupported object');
        }
        break;
      }
      case 0x51: stack.push(persistent(pop())); break; // BINPERSID
      default: { // the remaining protocol-0 text opcodes, INST/OBJ and extension registries: torch never writes them
        const name = UNSUPPORTED_OPCODES[op];
        if (name) {
          throw new LibreYOLOError('model_load_failed',
            `Could not read ${source}: its pickle uses the ${name} opcode at byte ${pos - 1}, which this reader does not support ` +
              '(torch.save never writes it; checkpoints saved with pickle_protocol 1 to 5 load). Re-save it with torch.save(obj, path).');
        }
        throw corrupt(source, `unknown pickle opcode 0x${op.toString(16).padStart(2, '0')} at byte ${pos - 1}`);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Writer

/**
 * A number the writer must emit as a Python float even when it is whole (JS numbers do not say:
 * `0` would become the int 0 where the original writes `0.0`).
 */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** A number, or each number of a list, as Python float(s). */
export function pyFloat(v: number | number[]): PyFloat | PyFloat[] {
  return Array.isArray(v) ? v.map((x) => new PyFloat(x)) : new PyFloat(v);
}

/** What the writer accepts: PyValue plus plain JS objects (written as str-keyed dicts) and PyFloat. */
export type PyWritable = PyValue | PyFloat | undefined | { [key: string]: PyWritable } | PyWritable[];

export interface StorageRef {
  key: string;
  numel: number;
}

/** Growable byte buffer. */
class Sink {
  buf = new Uint8Array(1 << 16);
  len = 0;
  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.len + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }
  byte(...bs: number[]): void {
    this.ensure(bs.length);
    for (const b of bs) this.buf[this.len++] = b;
  }
  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }
  u16(v: number): void { this.byte(v & 0xff, (v >>> 8) & 0xff); }
  u32(v: number): void { this.byte(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff); }
  result(): Uint8Array { return this.buf.slice(0, this.len); }
}

const utf8enc = new TextEncoder();
const BATCH = 1000; // Python's pickler batches SETITEMS/APPENDS by 1000

/**
 * Writes `obj` as a protocol-2 pickle shaped like torch.save's data.pkl. `storageFor` assigns each
 * tensor its storage key (the zip entry archive/data/<key>); tensors are written contiguous.
 */
export function dumpsTorchPickle(obj: PyWritable, storageFor: (t: HostTensor) => StorageRef): Uint8Array {
  const out = new Sink();
  const memo = new Map<string, number>();
  const active = new Set<object>();

  // Memoised like Python: globals and strings are written once, then fetched with BINGET.
  const fromMemo = (key: string): boolean => {
    const i = memo.get(key);
    if (i === undefined) return false;
    if (i < 256) out.byte(0x68, i); // BINGET
    else { out.byte(0x6a); out.u32(i); } // LONG_BINGET
    return true;
  };
  const put = (key: string) => {
    const i = memo.size;
    memo.set(key, i);
    if (i < 256) out.byte(0x71, i); // BINPUT
    else { out.byte(0x72); out.u32(i); } // LONG_BINPUT
  };
  const global = (module: string, name: string) => {
    if (fromMemo(`g:${module}\n${name}`)) return;
    out.byte(0x63);
    out.bytes(utf8enc.encode(`${module}\n${name}\n`));
    put(`g:${module}\n${name}`);
  };
  const str = (s: string) => {
    if (fromMemo(`s:${s}`)) return;
    const b = utf8enc.encode(s);
    out.byte(0x58); // BINUNICODE
    out.u32(b.length);
    out.bytes(b);
    put(`s:${s}`);
  };
  const int = (v: number | bigint) => {
    const n = typeof v === 'bigint' ? v : BigInt(v);
    if (n >= 0n && n <= 0xffn) out.byte(0x4b, Number(n));
    else if (n >= 0n && n <= 0xffffn) { out.byte(0x4d); out.u16(Number(n)); }
    else if (n >= -0x80000000n && n <= 0x7fffffffn) { out.byte(0x4a); out.u32(Number(n) >>> 0); }
    else {
      const le: number[] = []; // two's complement, minimal length, as Python's encode_long
      let x = n;
      for (;;) {
        le.push(Number(x & 0xffn));
        x >>= 8n;
        const signBit = (le[le.length - 1]! & 0x80) !== 0;
        if ((x === 0n && !signBit) || (x === -1n && signBit)) break;
      }
      out.byte(0x8a, le.length, ...le); // LONG1
    }
  };
  const float = (v: number) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, false);
    out.byte(0x47);
    out.bytes(b);
  };
  const tuple = (items: (() => void)[]) => {
    if (items.length === 0) { out.byte(0x29); return; }
    if (items.length <= 3) { for (const f of items) f(); out.byte([0x85, 0x86, 0x87][items.length - 1]!); return; }
    out.byte(0x28);
    for (const f of items) f();
    out.byte(0x74);
  };
  const emptyOrderedDict = () => { global('collections', 'OrderedDict'); out.byte(0x29, 0x52); };
  const setitems = (entries: [PyWritable, PyWritable][]) => {
    for (let i = 0; i < entries.length; i += BATCH) {
      const batch = entries.slice(i, i + BATCH);
      if (batch.length > 1) out.byte(0x28);
      for (const [k, v] of batch) { value(k); value(v); }
      out.byte(batch.length > 1 ? 0x75 : 0x73);
    }
  };
  const tensor = (t: HostTensor) => {
    const n = numel(t.dims);
    if (t.data.length < n) throw new RangeError(`tensor ${t.dtype}[${t.dims.join(',')}] has only ${t.data.length} elements`);
    const ref = storageFor(t);
    const strides = new Array<number>(t.dims.length);
    for (let d = t.dims.length - 1, s = 1; d >= 0; d--) { strides[d] = s; s *= t.dims[d]!; }
    global('torch._utils', '_rebuild_tensor_v2');
    out.byte(0x28); // MARK: args tuple
    tuple([() => str('storage'), () => global('torch', STORAGE_CLASS_OF[t.dtype]), () => str(ref.key), () => str('cpu'), () => int(ref.numel)]);
    out.byte(0x51); // BINPERSID
    int(0); // storage offset
    tuple(t.dims.map((d) => () => int(d)));
    tuple(strides.map((s) => () => int(s)));
    out.byte(0x89); // requires_grad = False
    emptyOrderedDict(); // backward hooks
    out.byte(0x74, 0x52); // TUPLE, REDUCE
  };
  const value = (v: PyWritable): void => {
    if (v === null || v === undefined) { out.byte(0x4e); return; }
    if (typeof v === 'boolean') { out.byte(v ? 0x88 : 0x89); return; }
    if (typeof v === 'bigint') { int(v); return; }
    if (typeof v === 'number') { if (Number.isSafeInteger(v)) int(v); else float(v); return; }
    if (typeof v === 'string') { str(v); return; }
    if (typeof v !== 'object') throw new TypeError(`cannot pickle a ${typeof v}`);
    if (v instanceof PyFloat) { float(v.value); return; }
    if (v instanceof TorchDtype) { global('torch', v.name); return; }
    if (isHostTensor(v)) { tensor(v); return; }
    if (active.has(v)) throw new TypeError('cannot pickle a cyclic structure');
    active.add(v);
    if (v instanceof Uint8Array) {
      global('_codecs', 'encode'); // protocol 2 bytes: _codecs.encode(latin1 str, 'latin1')
      const s = Array.from(v, (c) => String.fromCharCode(c)).join('');
      tuple([() => str(s), () => str('latin1')]);
      out.byte(0x52);
    } else if (v instanceof PyOrderedDict) {
      emptyOrderedDict();
      setitems([...v.entries()]);
    } else if (v instanceof PyNamespace) {
      global('argparse', 'Namespace');
      out.byte(0x29, 0x81, 0x7d); // EMPTY_TUPLE, NEWOBJ, EMPTY_DICT (its __dict__)
      setitems([...v.entries()]);
      out.byte(0x62); // BUILD
    } else if (v instanceof Map) {
      out.byte(0x7d);
      setitems([...v.entries()]);
    } else if (Array.isArray(v)) {
      out.byte(0x5d); // EMPTY_LIST
      for (let i = 0; i < v.length; i += BATCH) {
        const batch = v.slice(i, i + BATCH);
        if (batch.length > 1) out.byte(0x28);
        for (const x of batch) value(x);
        out.byte(batch.length > 1 ? 0x65 : 0x61);
      }
    } else if (v instanceof Set || ArrayBuffer.isView(v)) {
      throw new TypeError(`cannot pickle ${v.constructor.name} into a weights-only checkpoint`);
    } else {
      out.byte(0x7d);
      setitems(Object.entries(v).filter(([, x]) => x !== undefined));
    }
    active.delete(v);
  };

  out.byte(0x80, 2); // PROTO 2
  value(obj);
  out.byte(0x2e); // STOP
  return out.result();
}
