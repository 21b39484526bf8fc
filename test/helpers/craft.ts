/**
 * Hand-built hostile model files: zip archives whose headers say what the test wants (sizes,
 * methods, CRCs, duplicate names, overlapping entries), deflate streams that unpack to gigabytes
 * from megabytes, and torch-style pickles whose tensors have arbitrary offsets, sizes and strides.
 * Nothing here goes through our own writers, so the reader under test cannot share their mistakes.
 */
import { constants, crc32, deflateRawSync } from 'node:zlib';

export interface CraftEntry {
  name: string;
  /** The bytes as they lie in the file (already compressed when method is 8). */
  data: Uint8Array;
  /** 0 stored (default), 8 deflate, or any other method number to claim. */
  method?: number;
  /** Declared uncompressed size (default data.length); above 0xfffffffe it goes in a zip64 extra field. */
  size?: number;
  /** Declared CRC-32 (default: of `data`, right for stored entries). */
  crc?: number;
  /** Local-header offset to claim instead of the real one (for overlapping entries). */
  offset?: number;
}

const u16 = (v: number) => [v & 0xff, (v >>> 8) & 0xff];
const u32 = (v: number) => [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff];
const u64 = (v: number) => [...u32(v % 2 ** 32), ...u32(Math.floor(v / 2 ** 32))];

/** A zip archive with exactly the declared fields given (central directory and local headers agree). */
export function craftZip(entries: CraftEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const central: number[] = [];
  let at = 0;
  for (const e of entries) {
    const name = new TextEncoder().encode(e.name);
    const size = e.size ?? e.data.length;
    const crc = e.crc ?? (crc32(e.data) >>> 0);
    const method = e.method ?? 0;
    const zip64 = size > 0xfffffffe;
    const extra = zip64 ? [...u16(1), ...u16(16), ...u64(size), ...u64(e.data.length)] : [];
    const sizes = zip64 ? [...u32(0xffffffff), ...u32(0xffffffff)] : [...u32(e.data.length), ...u32(size)];
    const common = [...u16(zip64 ? 45 : 20), ...u16(0), ...u16(method), ...u16(0), ...u16(0x21), ...u32(crc), ...sizes, ...u16(name.length), ...u16(extra.length)];
    const local = Uint8Array.from([...u32(0x04034b50), ...common, ...name, ...extra]);
    const offset = e.offset ?? at;
    if (e.offset === undefined) {
      parts.push(local, e.data);
      at += local.length + e.data.length;
    }
    central.push(...u32(0x02014b50), ...u16(zip64 ? 45 : 20), ...common, ...u16(0), ...u16(0), ...u16(0), ...u32(0), ...u32(offset), ...name, ...extra);
  }
  const eocd = [...u32(0x06054b50), ...u16(0), ...u16(0), ...u16(entries.length), ...u16(entries.length), ...u32(central.length), ...u32(at), ...u16(0)];
  parts.push(Uint8Array.from(central), Uint8Array.from(eocd));
  return Buffer.concat(parts);
}

/**
 * A raw deflate stream that unpacks to `mib` MiB of zeros (about 1 KiB per MiB): one sync-flushed
 * segment repeated, then an empty final block. Built in the test instead of by compressing gigabytes.
 */
export function zeroBomb(mib: number): Uint8Array {
  const segment = deflateRawSync(new Uint8Array(1 << 20), { level: 9, finishFlush: constants.Z_SYNC_FLUSH });
  const out = new Uint8Array(segment.length * mib + 2);
  for (let i = 0; i < mib; i++) out.set(segment, i * segment.length);
  out.set([0x03, 0x00], segment.length * mib); // BFINAL, fixed Huffman, end of block
  return out;
}

/** A tensor as torch pickles it: _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict()). */
export interface CraftTensor {
  tensor: { key: string; numel: number; offset?: number; size: number[]; stride?: number[]; storageClass?: string };
}

/** Values the pickler below writes: dicts (plain objects / Maps), lists, str, int, bool, None, tensors. */
export type CraftValue = null | boolean | number | string | CraftValue[] | CraftTensor | Map<CraftValue, CraftValue> | { [k: string]: CraftValue };

/** A protocol-2 pickle of `value` with torch's opcode layout for tensors (persistent ids for storages). */
export function torchPickle(value: CraftValue): Uint8Array {
  const out: number[] = [0x80, 0x02];
  const str = (s: string) => {
    const b = new TextEncoder().encode(s);
    out.push(0x58, ...u32(b.length));
    for (const x of b) out.push(x);
  };
  const int = (n: number) => {
    if (n >= 0 && n < 256) out.push(0x4b, n);
    else if (n >= -(2 ** 31) && n < 2 ** 31) out.push(0x4a, ...u32(n >>> 0));
    else out.push(0x8a, 8, ...u64(n)); // LONG1, 8 bytes little-endian (non-negative here)
  };
  const global = (mod: string, name: string) => {
    out.push(0x63);
    for (const c of `${mod}\n${name}\n`) out.push(c.charCodeAt(0));
  };
  const tuple = (items: number[]) => {
    out.push(0x28);
    for (const n of items) int(n);
    out.push(0x74);
  };
  const write = (v: CraftValue): void => {
    if (v === null) out.push(0x4e);
    else if (typeof v === 'boolean') out.push(v ? 0x88 : 0x89);
    else if (typeof v === 'number') int(v);
    else if (typeof v === 'string') str(v);
    else if (Array.isArray(v)) {
      out.push(0x5d);
      for (const x of v) { write(x); out.push(0x61); }
    } else if (v instanceof Map) {
      out.push(0x7d);
      for (const [k, x] of v) { write(k); write(x); out.push(0x73); }
    } else if ('tensor' in v && typeof v.tensor === 'object' && v.tensor !== null && !Array.isArray(v.tensor) && 'key' in v.tensor) {
      const t = (v as CraftTensor).tensor;
      const stride = t.stride ?? t.size.map((_, d) => t.size.slice(d + 1).reduce((a, b) => a * b, 1));
      global('torch._utils', '_rebuild_tensor_v2');
      out.push(0x28); // MARK: the args tuple
      out.push(0x28);
      str('storage');
      global('torch', t.storageClass ?? 'FloatStorage');
      str(t.key);
      str('cpu');
      int(t.numel);
      out.push(0x74, 0x51); // TUPLE, BINPERSID
      int(t.offset ?? 0);
      tuple(t.size);
      tuple(stride);
      out.push(0x89); // requires_grad False
      global('collections', 'OrderedDict');
      out.push(0x29, 0x52, 0x74, 0x52); // (), REDUCE, TUPLE, REDUCE
    } else {
      out.push(0x7d);
      for (const [k, x] of Object.entries(v)) { str(k); write(x as CraftValue); out.push(0x73); }
    }
  };
  write(value);
  out.push(0x2e);
  return Uint8Array.from(out);
}

/** A torch.save-shaped archive: archive/data.pkl, archive/data/<key> for each storage, archive/version. */
export function craftCheckpoint(pickle: Uint8Array, storages: CraftEntry[] = [], extra: CraftEntry[] = []): Uint8Array {
  return craftZip([
    { name: 'archive/data.pkl', data: pickle },
    ...storages.map((s) => ({ ...s, name: `archive/data/${s.name}` })),
    { name: 'archive/version', data: new TextEncoder().encode('3\n') },
    ...extra,
  ]);
}
