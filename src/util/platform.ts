/**
 * The few host facilities the core needs that differ between Node and the browser: raw inflate and
 * CRC-32 (zip readers), the CPU count (ORT's default threads), the current thread's id (host spans)
 * and a process-exit hook (releasing sessions). This is the Node implementation; the browser build
 * swaps in `src/browser/platform.ts`, which exports the same names (the swaps are listed in
 * scripts/browser-seams.ts; test/platform-seams.test.ts checks each pair).
 */
import { cpus } from 'node:os';
import { threadId } from 'node:worker_threads';
import { crc32 as zlibCrc32, inflateRawSync } from 'node:zlib';

/** Thrown by inflateRaw when the data unpacks past `maxBytes`. */
export class InflateOverflowError extends Error {}

/** Inflates raw deflate data, stopping (with InflateOverflowError) as soon as the output passes `maxBytes`. */
export function inflateRaw(data: Uint8Array, maxBytes: number): Uint8Array {
  let out: Buffer;
  try {
    out = inflateRawSync(data, { maxOutputLength: Math.max(maxBytes, 1) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new InflateOverflowError((err as Error).message);
    throw err;
  }
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/** CRC-32 (the zip polynomial) of `data`, unsigned. */
export const crc32 = (data: Uint8Array): number => zlibCrc32(data) >>> 0;

/** Logical CPU cores (at least 1). */
export const cpuCount = (): number => Math.max(1, cpus().length);

/** Id of the current thread (0 on the main thread). */
export const currentThreadId = (): number => threadId;

/** Runs `fn` when the process exits. */
export function onProcessExit(fn: () => void): void {
  process.once('exit', fn);
}
