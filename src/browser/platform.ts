/**
 * The browser side of `util/platform.ts` (same exports): fflate's inflate, a table CRC-32, the
 * browser's core count, thread id 0 and no exit hook (a page's workers end with the page).
 */
import { inflateSync } from 'fflate';

export class InflateOverflowError extends Error {}

export function inflateRaw(data: Uint8Array, maxBytes: number): Uint8Array {
  // One byte of headroom: output that fills it is past the declared size. fflate never grows a buffer it is given.
  const out = inflateSync(data, { out: new Uint8Array(maxBytes + 1) });
  if (out.length > maxBytes) throw new InflateOverflowError(`inflated data passes ${maxBytes} bytes`);
  return out;
}

let table: Uint32Array | null = null;
function crcTable(): Uint32Array {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
}

export function crc32(data: Uint8Array): number {
  const t = table ??= crcTable();
  let c = 0xffffffff;
  for (let i = 0; i < data.length; i++) c = t[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export const cpuCount = (): number => Math.max(1, (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1);

export const currentThreadId = (): number => 0;

export function onProcessExit(_fn: () => void): void {
  // A page has no exit event worth hooking: its workers, and their sessions, end with it.
}
