/**
 * safetensors: u64 little-endian header length, a JSON header
 * `{ name: { dtype, shape, data_offsets: [begin, end] }, __metadata__?: { str: str } }`, then raw
 * little-endian tensor bytes (offsets relative to the end of the header).
 */

import { LibreYOLOError } from '../errors.ts';
import { BYTES_PER_ELEMENT, fromBytes, numel, toBytes, type DType, type HostTensor } from '../graph/tensor.ts';

const TO_DTYPE: Record<string, DType> = {
  F32: 'float32', F16: 'float16', BF16: 'bfloat16', F64: 'float64', I64: 'int64',
  I32: 'int32', I16: 'int16', I8: 'int8', U8: 'uint8', BOOL: 'bool',
};
const FROM_DTYPE = Object.fromEntries(Object.entries(TO_DTYPE).map(([k, v]) => [v, k])) as Record<DType, string>;

const MAX_HEADER = 100 * 1024 * 1024; // the reference implementation's limit; guards absurd lengths

export interface Safetensors {
  tensors: Map<string, HostTensor>;
  metadata: Record<string, string>;
}

function bad(path: string, why: string): LibreYOLOError {
  return new LibreYOLOError('model_load_failed',
    `Cannot load ${path}: invalid safetensors file (${why}). The file is truncated or damaged; re-download or re-export it.`);
}

/** Parses a safetensors file. Tensors are views of `bytes` where alignment allows. */
export function readSafetensors(input: Uint8Array, path: string): Safetensors {
  // A plain view: Buffer#slice does not copy, which would defeat fromBytes' copy of unaligned data.
  const bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  if (bytes.length < 8) throw bad(path, 'shorter than the 8-byte header length');
  const headerLen = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  if (headerLen < 2n || headerLen > BigInt(Math.min(MAX_HEADER, bytes.length - 8))) {
    throw bad(path, `header length ${headerLen} does not fit in ${bytes.length} bytes`);
  }
  const dataStart = 8 + Number(headerLen);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, dataStart)));
  } catch {
    throw bad(path, 'header is not valid UTF-8 JSON');
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw bad(path, 'header is not a JSON object');

  const data = bytes.subarray(dataStart);
  const tensors = new Map<string, HostTensor>();
  const spans: { name: string; begin: number; end: number }[] = [];
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      metadata = readMetadata(entry, path);
      continue;
    }
    const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const dtype = typeof e?.dtype === 'string' ? TO_DTYPE[e.dtype] : undefined;
    if (!dtype) throw bad(path, `tensor ${name} has unsupported dtype ${JSON.stringify(e?.dtype)}`);
    const shape = e.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw bad(path, `tensor ${name} has a bad shape`);
    const offs = e.data_offsets;
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((o) => Number.isSafeInteger(o) && o >= 0)) {
      throw bad(path, `tensor ${name} has bad data_offsets`);
    }
    const [begin, end] = offs as [number, number];
    const dims = shape as number[];
    if (end - begin !== numel(dims) * BYTES_PER_ELEMENT[dtype] || end > data.length) {
      throw bad(path, `tensor ${name} data [${begin}, ${end}) does not match its shape or lies past the end of the file`);
    }
    spans.push({ name, begin, end });
    tensors.set(name, fromBytes(dtype, dims, data.subarray(begin, end)));
  }
  checkTiling(spans, data.length, path);
  return { tensors, metadata };
}

/**
 * As the reference implementation requires: the tensors' byte ranges, in order, tile the data
 * exactly (no overlap, so two tensors never share bytes; no gap; nothing after the last).
 */
function checkTiling(spans: { name: string; begin: number; end: number }[], length: number, path: string): void {
  spans.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  for (const s of spans) {
    if (s.begin < at) throw bad(path, `tensor ${s.name} data [${s.begin}, ${s.end}) overlaps the tensor before it`);
    if (s.begin > at) throw bad(path, `tensor ${s.name} data starts at ${s.begin}, leaving a gap after byte ${at}`);
    at = s.end;
  }
  if (at !== length) throw bad(path, `the tensors cover ${at} of the ${length} data bytes`);
}

function readMetadata(entry: unknown, path: string): Record<string, string> {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw bad(path, '__metadata__ is not an object');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(entry)) {
    if (typeof v !== 'string') throw bad(path, `__metadata__ value for ${k} is not a string`);
    out[k] = v;
  }
  return out;
}

/** Serialises tensors (in iteration order) with an optional string metadata map. */
export function writeSafetensors(
  tensors: Map<string, HostTensor> | Record<string, HostTensor>,
  metadata?: Record<string, string>,
): Uint8Array {
  const entries = tensors instanceof Map ? [...tensors.entries()] : Object.entries(tensors);
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  const blobs: Uint8Array[] = [];
  for (const [name, t] of entries) {
    if (name === '__metadata__') throw new TypeError('"__metadata__" is reserved and cannot name a tensor');
    const n = numel(t.dims) * BYTES_PER_ELEMENT[t.dtype];
    const blob = toBytes(t).subarray(0, n);
    if (blob.length !== n) throw new RangeError(`tensor ${name} has fewer elements than its dims say`);
    header[name] = { dtype: FROM_DTYPE[t.dtype], shape: t.dims, data_offsets: [offset, offset + n] };
    blobs.push(blob);
    offset += n;
  }
  // Pad the header with spaces to 8 bytes so every tensor that starts aligned in the data stays aligned.
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  if (padded !== json.length) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(json);
    json = p;
  }
  const out = new Uint8Array(8 + json.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const b of blobs) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
