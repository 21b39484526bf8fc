/**
 * What a pickle may name and call: the allow-list of globals (tensor rebuilders, plain containers,
 * numpy scalars), tensor rebuild from loaded storage, and the tensor-expansion budget. Anything not
 * listed is refused at the GLOBAL opcode, before a REDUCE could call it.
 */

import { LibreYOLOError } from '../../errors.ts';
import { BYTES_PER_ELEMENT, f16ToF32, fromBytes, numel, zeros, type DType, type HostTensor } from '../../graph/tensor.ts';
import { describeBytes, describeLimit, raiseAdvice, RATIO_ALLOWANCE_BYTES } from '../../util/limits.ts';
import { isHostTensor, PyNamespace, PyOrderedDict, STORAGE_CLASS_OF, TorchDtype, type PyValue } from './values.ts';

/** Bytes of storage loaded and of tensors rebuilt from them, for the expansion cap. */
export class TensorBudget {
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


/** A resolved, allow-listed global. `call` is present only for things REDUCE/NEWOBJ may invoke. */
export class SafeGlobal {
  constructor(
    readonly qualname: string,
    readonly call?: (args: unknown[]) => unknown,
    readonly storageDtype?: DType,
  ) {}
}

/** Loaded storage: bytes plus what the persistent id said about them. */
export class TorchStorage {
  constructor(readonly dtype: DType, readonly numel: number, readonly bytes: Uint8Array) {}
}

/** numpy dtype, only as far as numpy scalar decoding needs it. */
export class NumpyDtype {
  byteorder = '<';
  constructor(readonly str: string) {}
}

const TORCH_DTYPE_GLOBALS: Record<string, DType> = {
  float32: 'float32', float: 'float32', float16: 'float16', half: 'float16', bfloat16: 'bfloat16',
  float64: 'float64', double: 'float64', int64: 'int64', long: 'int64', int32: 'int32', int: 'int32',
  int16: 'int16', short: 'int16', int8: 'int8', uint8: 'uint8', bool: 'bool',
};

export function buildAllowList(source: string, budget: TensorBudget): Map<string, SafeGlobal | TorchDtype> {
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

export function resolveGlobal(allow: Map<string, SafeGlobal | TorchDtype>, module: string, name: string, source: string): SafeGlobal | TorchDtype {
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

export function corrupt(source: string, what: string): LibreYOLOError {
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

export function small(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}
