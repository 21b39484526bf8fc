/** Host-side tensors: the one currency passed between weights, graph, runtime and predict code. */

export type DType = 'float32' | 'float16' | 'bfloat16' | 'float64' | 'int64' | 'int32' | 'int16' | 'int8' | 'uint8' | 'bool';

export type TypedData =
  | Float32Array
  | Float64Array
  | Uint16Array // float16 / bfloat16 bit patterns (Node 20 has no Float16Array)
  | BigInt64Array
  | Int32Array
  | Int16Array
  | Int8Array
  | Uint8Array;

export interface HostTensor {
  dtype: DType;
  dims: number[];
  data: TypedData;
}

export function numel(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

export const BYTES_PER_ELEMENT: Record<DType, number> = {
  float32: 4, float16: 2, bfloat16: 2, float64: 8, int64: 8, int32: 4, int16: 2, int8: 1, uint8: 1, bool: 1,
};

/** Allocates a zero tensor of the given dtype and shape. */
export function zeros(dtype: DType, dims: number[]): HostTensor {
  const n = numel(dims);
  const data: TypedData = (() => {
    switch (dtype) {
      case 'float32': return new Float32Array(n);
      case 'float64': return new Float64Array(n);
      case 'float16': case 'bfloat16': return new Uint16Array(n);
      case 'int64': return new BigInt64Array(n);
      case 'int32': return new Int32Array(n);
      case 'int16': return new Int16Array(n);
      case 'int8': return new Int8Array(n);
      case 'uint8': case 'bool': return new Uint8Array(n);
    }
  })();
  return { dtype, dims: [...dims], data };
}

/** Views raw little-endian bytes as a typed array of `dtype` (copies when unaligned). */
export function fromBytes(dtype: DType, dims: number[], bytes: Uint8Array): HostTensor {
  const size = BYTES_PER_ELEMENT[dtype];
  const n = numel(dims);
  if (bytes.byteLength < n * size) {
    throw new RangeError(`tensor data too short: need ${n * size} bytes for ${dtype}[${dims.join(',')}], have ${bytes.byteLength}`);
  }
  // A copy for unaligned data: `new Uint8Array(view)` copies even for a Buffer, whose slice() would not.
  const aligned = bytes.byteOffset % size === 0 ? bytes : new Uint8Array(bytes.subarray(0, n * size));
  const { buffer, byteOffset } = aligned;
  const data: TypedData = (() => {
    switch (dtype) {
      case 'float32': return new Float32Array(buffer, byteOffset, n);
      case 'float64': return new Float64Array(buffer, byteOffset, n);
      case 'float16': case 'bfloat16': return new Uint16Array(buffer, byteOffset, n);
      case 'int64': return new BigInt64Array(buffer, byteOffset, n);
      case 'int32': return new Int32Array(buffer, byteOffset, n);
      case 'int16': return new Int16Array(buffer, byteOffset, n);
      case 'int8': return new Int8Array(buffer, byteOffset, n);
      case 'uint8': case 'bool': return new Uint8Array(buffer, byteOffset, n);
    }
  })();
  return { dtype, dims: [...dims], data };
}

/** Raw little-endian bytes of a tensor (a view, no copy). */
export function toBytes(t: HostTensor): Uint8Array {
  return new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

/** float32 view of any floating tensor (converting half types). */
export function asFloat32(t: HostTensor): Float32Array {
  if (t.data instanceof Float32Array) return t.data;
  if (t.dtype === 'float16') return f16ToF32Array(t.data as Uint16Array);
  if (t.dtype === 'bfloat16') {
    const src = t.data as Uint16Array;
    const out = new Float32Array(src.length);
    const u32 = new Uint32Array(out.buffer);
    for (let i = 0; i < src.length; i++) u32[i] = src[i]! << 16;
    return out;
  }
  if (t.data instanceof BigInt64Array) return Float32Array.from(t.data, (v) => Number(v));
  return Float32Array.from(t.data as ArrayLike<number>);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 -> float16 bits, round to nearest even (matches ORT's Cast). */
export function f32ToF16(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // inf / nan
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow -> inf
  if (e <= 0) {
    if (e < -10) return sign; // underflow -> signed zero
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && (half & 1))) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1))) half++; // may carry into exponent: correct
  return sign | half;
}

export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

export function f32ToF16Array(src: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = f32ToF16(src[i]!);
  return out;
}

export function f16ToF32Array(src: Uint16Array): Float32Array {
  const out = new Float32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = f16ToF32(src[i]!);
  return out;
}

/** float32 -> bfloat16 bits, round to nearest even. */
export function f32ToBf16Array(src: Float32Array): Uint16Array {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) {
    const x = bits[i]!;
    if ((x & 0x7fffffff) > 0x7f800000) { out[i] = (x >>> 16) | 0x40; continue; } // nan stays nan
    out[i] = (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
  }
  return out;
}
