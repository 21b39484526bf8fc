/**
 * Python's `random.Random(seed)` for a non-negative integer seed: the MT19937 generator seeded by
 * init_by_array over the seed's 32-bit words (little-endian), with `random()`, `getrandbits(k)`,
 * `choice()` and `randint()` drawing as CPython does. Where the original seeds a generator from a
 * deterministic number (RF-DETR's per-step multi-scale: `random.Random(step).choice(scales)`),
 * this reproduces its draws exactly.
 */

const N = 624;
const M = 397;

export class PyRandom {
  private readonly mt = new Uint32Array(N);
  private index = N;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`PyRandom seed must be a safe integer, got ${seed}`);
    let n = Math.abs(seed);
    const key: number[] = [];
    do {
      key.push(n % 0x100000000);
      n = Math.floor(n / 0x100000000);
    } while (n > 0);
    this.initByArray(key);
  }

  private initGenrand(s: number): void {
    const mt = this.mt;
    mt[0] = s >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
    this.index = N;
  }

  private initByArray(key: readonly number[]): void {
    const mt = this.mt;
    this.initGenrand(19650218);
    let i = 1, j = 0;
    for (let k = Math.max(N, key.length); k > 0; k--) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      mt[i] = ((mt[i]! ^ Math.imul(prev, 1664525)) + key[j]! + j) >>> 0;
      i++; j++;
      if (i >= N) { mt[0] = mt[N - 1]!; i = 1; }
      if (j >= key.length) j = 0;
    }
    for (let k = N - 1; k > 0; k--) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      mt[i] = ((mt[i]! ^ Math.imul(prev, 1566083941)) - i) >>> 0;
      i++;
      if (i >= N) { mt[0] = mt[N - 1]!; i = 1; }
    }
    mt[0] = 0x80000000;
  }

  /** One tempered 32-bit output (genrand_uint32). */
  uint32(): number {
    const mt = this.mt;
    if (this.index >= N) {
      for (let k = 0; k < N; k++) {
        const y = (mt[k]! & 0x80000000) | (mt[(k + 1) % N]! & 0x7fffffff);
        mt[k] = mt[(k + M) % N]! ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      this.index = 0;
    }
    let y = mt[this.index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** `random()`: 53 random bits in [0, 1). */
  random(): number {
    const a = this.uint32() >>> 5, b = this.uint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** `getrandbits(k)` for 0 < k <= 32. */
  getrandbits(k: number): number {
    if (!(k > 0 && k <= 32)) throw new RangeError(`getrandbits supports 1..32 bits here, got ${k}`);
    return this.uint32() >>> (32 - k);
  }

  /** `_randbelow(n)`: uniform in [0, n) by rejection over bit_length(n) bits. */
  randbelow(n: number): number {
    if (!(Number.isInteger(n) && n > 0 && n <= 0xffffffff)) throw new RangeError(`randbelow needs 0 < n < 2^32, got ${n}`);
    const k = 32 - Math.clz32(n);
    let r = this.getrandbits(k);
    while (r >= n) r = this.getrandbits(k);
    return r;
  }

  choice<T>(seq: readonly T[]): T {
    if (seq.length === 0) throw new RangeError('Cannot choose from an empty sequence');
    return seq[this.randbelow(seq.length)]!;
  }

  /** `randint(a, b)`: a + randbelow(b - a + 1), both ends included. */
  randint(a: number, b: number): number {
    return a + this.randbelow(b - a + 1);
  }
}
