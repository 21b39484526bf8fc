/**
 * The writer (`dumpsTorchPickle`): protocol 2 with the opcode structure `torch.save` produces.
 */

import { numel, type HostTensor } from '../../graph/tensor.ts';
import { isHostTensor, PyFloat, PyNamespace, PyOrderedDict, STORAGE_CLASS_OF, TorchDtype, type PyWritable, type StorageRef } from './values.ts';

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
