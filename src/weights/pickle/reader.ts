/**
 * The reader: a stack machine over the opcodes torch emits (protocols 1-5). Every GLOBAL goes
 * through the allow-list of ./globals.ts; nothing from the file is executed.
 */

import { LibreYOLOError } from '../../errors.ts';
import { BYTES_PER_ELEMENT } from '../../graph/tensor.ts';
import { limit, raiseAdvice } from '../../util/limits.ts';
import { buildAllowList, corrupt, NumpyDtype, resolveGlobal, SafeGlobal, small, TensorBudget, TorchStorage } from './globals.ts';
import { ALLOCATES, MAX_LONG_BYTES, UNSUPPORTED_OPCODES } from './opcodes.ts';
import { isHostTensor, PyNamespace, type PyValue, type StorageRequest } from './values.ts';


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

const utf8 = new TextDecoder('utf-8');

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
