/**
 * A zip reader for untrusted archives (.pt checkpoints, dataset zips). It reads the central
 * directory, never inflates an entry nobody asked for, and refuses, before inflating, anything that
 * would unpack past its limits: each entry's declared size against a per-entry cap and the caller's
 * expectation, the running total against a global cap and a ratio to the archive's size. Inflation
 * stops at the declared size (a lying header cannot make it grow), and every entry's size and CRC-32
 * are checked. Duplicate names, overlapping entries (the overlapping-file bomb), encryption and
 * compression methods other than stored/deflate are refused with a message naming what was found.
 */
import { crc32, inflateRaw, InflateOverflowError } from './platform.ts';
import { describeBytes, describeLimit, limit, raiseAdvice, RATIO_ALLOWANCE_BYTES } from './limits.ts';

/** Why a read failed: `not_zip` (no zip directory: truncated or another format), or the archive's fault. */
export type ZipFailure = 'not_zip' | 'damaged' | 'limit' | 'unsupported';

export interface ZipEntry {
  readonly name: string;
  readonly method: number;
  readonly compressedSize: number;
  /** Uncompressed size as the central directory declares it. */
  readonly size: number;
  readonly crc: number;
  /** Start of the local header; the data follows its name and extra field. */
  readonly headerOffset: number;
  readonly dataOffset: number;
}

export interface ZipLimits {
  entryBytes: number;
  totalBytes: number;
  ratio: number;
}

export function zipLimits(env: NodeJS.ProcessEnv = process.env): ZipLimits {
  return { entryBytes: limit('zipEntryBytes', env), totalBytes: limit('unzipBytes', env), ratio: limit('unzipRatio', env) };
}

export interface OpenZipOptions {
  /** Builds the error to throw; callers add which file and what to do. */
  fail: (why: string, kind: ZipFailure) => Error;
  /** Default: the limits in force (util/limits.ts). */
  limits?: ZipLimits;
}

const METHODS: Record<number, string> = {
  1: 'shrink', 6: 'implode', 9: 'deflate64', 12: 'bzip2', 14: 'LZMA', 19: 'IBM LZ77', 93: 'Zstandard', 95: 'xz', 96: 'JPEG', 97: 'WavPack', 98: 'PPMd', 99: 'AES-encrypted',
};

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CENTRAL_SIG = 0x02014b50;
const LOCAL_SIG = 0x04034b50;

export class ZipArchive {
  readonly entries: readonly ZipEntry[];
  private readonly byName = new Map<string, ZipEntry>();
  private readonly fail: OpenZipOptions['fail'];
  private readonly limits: ZipLimits;
  /** Bytes handed out so far (stored entries count too: they are copied or written by callers). */
  private unpacked = 0;
  private readonly allowed: number;

  constructor(private readonly bytes: Uint8Array, options: OpenZipOptions) {
    this.fail = options.fail;
    this.limits = options.limits ?? zipLimits();
    this.allowed = Math.min(this.limits.totalBytes, RATIO_ALLOWANCE_BYTES + this.limits.ratio * bytes.length);
    this.entries = this.readDirectory();
    for (const e of this.entries) {
      if (this.byName.has(e.name)) throw this.fail(`the archive lists entry '${e.name}' twice, which no zip writer produces`, 'damaged');
      this.byName.set(e.name, e);
    }
    this.checkNoOverlap();
  }

  get(name: string): ZipEntry | undefined {
    return this.byName.get(name);
  }

  /**
   * The entry's bytes (a view of the archive for stored entries). Refused before anything is
   * inflated when its declared size passes `maxBytes`, the per-entry cap or what is left of the total.
   */
  read(entry: ZipEntry, maxBytes = Infinity): Uint8Array {
    const { name, size } = entry;
    if (size > maxBytes) throw this.fail(`entry '${name}' declares ${size} bytes, more than the ${maxBytes} expected`, 'damaged');
    if (size > this.limits.entryBytes) {
      throw this.fail(`entry '${name}' would unpack to ${describeBytes(size)}, over the limit of ${describeLimit('zipEntryBytes', this.limits.entryBytes)} for one entry. ` +
        `If you trust the file: ${raiseAdvice('zipEntryBytes')}`, 'limit');
    }
    if (this.unpacked + size > this.allowed) {
      throw this.fail(this.allowed < this.limits.totalBytes
        ? `its entries would unpack to more than ${describeBytes(this.allowed)} from a ${describeBytes(this.bytes.length)} archive, over ${describeLimit('unzipRatio', this.limits.ratio)} ` +
          `times its size plus 64 MiB (a zip bomb, or an unusually compressible archive). If you trust the file: ${raiseAdvice('unzipRatio')}`
        : `its entries would unpack to more than ${describeBytes(this.allowed)} in all, over the limit of ${describeLimit('unzipBytes', this.allowed)}. If you trust the file: ${raiseAdvice('unzipBytes')}`, 'limit');
    }
    this.unpacked += size;
    const data = this.bytes.subarray(entry.dataOffset, entry.dataOffset + entry.compressedSize);
    let out: Uint8Array;
    if (entry.method === 0) {
      if (entry.compressedSize !== size) throw this.fail(`stored entry '${name}' has sizes ${entry.compressedSize} and ${size}`, 'damaged');
      out = data;
    } else {
      let inflated: Uint8Array;
      try {
        // Inflation stops as soon as the output passes the declared size.
        inflated = inflateRaw(data, size);
      } catch (err) {
        throw this.fail(err instanceof InflateOverflowError
          ? `entry '${name}' unpacks to more than the ${size} bytes it declares (a damaged archive or a zip bomb)`
          : `entry '${name}' does not inflate (${(err as Error).message})`, 'damaged');
      }
      if (inflated.length !== size) throw this.fail(`entry '${name}' unpacks to ${inflated.length} bytes but declares ${size}`, 'damaged');
      out = inflated;
    }
    if (crc32(out) !== entry.crc) throw this.fail(`entry '${name}' fails its CRC-32 check`, 'damaged');
    return out;
  }

  private u16(at: number): number {
    return this.bytes[at]! | (this.bytes[at + 1]! << 8);
  }

  private u32(at: number): number {
    return (this.bytes[at]! | (this.bytes[at + 1]! << 8) | (this.bytes[at + 2]! << 16) | (this.bytes[at + 3]! << 24)) >>> 0;
  }

  private u64(at: number): number {
    const v = this.u32(at) + this.u32(at + 4) * 2 ** 32;
    if (!Number.isSafeInteger(v)) throw this.fail('a zip64 field is larger than any file', 'damaged');
    return v;
  }

  private within(at: number, n: number): boolean {
    return at >= 0 && n >= 0 && at + n <= this.bytes.length;
  }

  private readDirectory(): ZipEntry[] {
    const b = this.bytes;
    let eocd = -1;
    for (let at = b.length - 22; at >= Math.max(0, b.length - 22 - 0xffff); at--) {
      if (this.u32(at) === EOCD_SIG) { eocd = at; break; }
    }
    if (eocd < 0) throw this.fail('no zip directory at the end of the file', 'not_zip');
    let count = this.u16(eocd + 10);
    let cdSize = this.u32(eocd + 12);
    let cdOffset = this.u32(eocd + 16);
    if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
      const loc = eocd - 20;
      if (loc < 0 || this.u32(loc) !== ZIP64_LOCATOR_SIG) throw this.fail('the zip64 directory locator is missing', 'not_zip');
      const rec = this.u64(loc + 8);
      if (!this.within(rec, 56) || this.u32(rec) !== ZIP64_EOCD_SIG) throw this.fail('the zip64 directory record is missing', 'not_zip');
      count = this.u64(rec + 32);
      cdSize = this.u64(rec + 40);
      cdOffset = this.u64(rec + 48);
    }
    if (!this.within(cdOffset, cdSize) || count * 46 > cdSize) throw this.fail('the zip directory lies outside the file', 'not_zip');
    const entries: ZipEntry[] = [];
    let at = cdOffset;
    for (let i = 0; i < count; i++) {
      if (!this.within(at, 46) || this.u32(at) !== CENTRAL_SIG) throw this.fail(`zip directory record ${i} is damaged`, 'not_zip');
      const flags = this.u16(at + 8);
      const method = this.u16(at + 10);
      const crc = this.u32(at + 16);
      let compressedSize = this.u32(at + 20);
      let size = this.u32(at + 24);
      const nameLen = this.u16(at + 28);
      const extraLen = this.u16(at + 30);
      const commentLen = this.u16(at + 32);
      let headerOffset = this.u32(at + 42);
      if (!this.within(at + 46, nameLen + extraLen + commentLen)) throw this.fail(`zip directory record ${i} is damaged`, 'not_zip');
      const name = new TextDecoder().decode(b.subarray(at + 46, at + 46 + nameLen));
      // zip64 extra field: the 64-bit values of whichever fields hold 0xffffffff, in this order.
      for (let x = at + 46 + nameLen; x + 4 <= at + 46 + nameLen + extraLen;) {
        const id = this.u16(x);
        const len = this.u16(x + 2);
        if (id === 0x0001) {
          let p = x + 4;
          if (size === 0xffffffff && p + 8 <= x + 4 + len) { size = this.u64(p); p += 8; }
          if (compressedSize === 0xffffffff && p + 8 <= x + 4 + len) { compressedSize = this.u64(p); p += 8; }
          if (headerOffset === 0xffffffff && p + 8 <= x + 4 + len) headerOffset = this.u64(p);
        }
        x += 4 + len;
      }
      if (flags & 0x1) throw this.fail(`entry '${name}' is encrypted, which is not supported`, 'unsupported');
      if (method !== 0 && method !== 8) {
        throw this.fail(`entry '${name}' uses ${METHODS[method] ?? 'unknown'} compression (zip method ${method}), which is not supported: only stored and deflate entries can be read`, 'unsupported');
      }
      if (!this.within(headerOffset, 30) || this.u32(headerOffset) !== LOCAL_SIG) throw this.fail(`entry '${name}' has no local header where the directory says`, 'damaged');
      const dataOffset = headerOffset + 30 + this.u16(headerOffset + 26) + this.u16(headerOffset + 28);
      if (!this.within(dataOffset, compressedSize)) throw this.fail(`entry '${name}' reaches past the end of the file`, 'damaged');
      entries.push({ name, method, compressedSize, size, crc, headerOffset, dataOffset });
      at += 46 + nameLen + extraLen + commentLen;
    }
    return entries;
  }

  /** Entries sharing bytes are the overlapping-file bomb's trick (one kernel unpacked N times). */
  private checkNoOverlap(): void {
    const spans = [...this.entries].sort((a, b) => a.headerOffset - b.headerOffset);
    for (let i = 1; i < spans.length; i++) {
      const prev = spans[i - 1]!;
      if (spans[i]!.headerOffset < prev.dataOffset + prev.compressedSize) {
        throw this.fail(`entries '${prev.name}' and '${spans[i]!.name}' overlap in the file (a zip bomb pattern)`, 'damaged');
      }
    }
  }
}
