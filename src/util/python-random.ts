/**
 * CPython's `random.Random(seed)` for an integer seed: the MT19937 generator seeded with
 * `init_by_array` over the seed's 32-bit words (least significant first, |seed| as CPython takes),
 * `getrandbits`, `random()` (53 bits from two draws) and `choice` through `_randbelow`, which draws
 * `k = bit_length(n)` bits until the value is below n. The same seed gives CPython's sequence.
 */

const N = 624;
const M = 397;

export class PythonRandom {
  private readonly mt = new Uint32Array(N);
  private index = N;

  /** `seed`: a safe integer (its absolute value seeds the generator, as in CPython). */
  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`PythonRandom: the seed must be a safe integer, got ${seed}`);
    let s = BigInt(Math.abs(seed));
    const key: number[] = [];
    do { key.push(Number(s & 0xffffffffn)); s >>= 32n; } while (s > 0n);
    this.initByArray(key);
  }

  private initGenrand(s: number): void {
    const mt = this.mt;
    mt[0] = s >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      mt[i] = (Math.imul(prev, 1812433253) + i) >>> 0;
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

  /** The next tempered 32-bit output. */
  private next32(): number {
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
    y = (y ^ ((y << 7) & 0x9d2c5680)) >>> 0;
    y = (y ^ ((y << 15) & 0xefc60000)) >>> 0;
    return (y ^ (y >>> 18)) >>> 0;
  }

  /** `random()`: a float in [0, 1) from 27 + 26 bits. */
  random(): number {
    const a = this.next32() >>> 5, b = this.next32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** `getrandbits(k)`, 0 <= k <= 53 (so the value is an exact number): 32-bit words, least significant first, the last one's top bits kept. */
  getrandbits(k: number): number {
    if (!Number.isInteger(k) || k < 0 || k > 53) throw new RangeError(`PythonRandom.getrandbits: k must be an integer in 0..53, got ${k}`);
    if (k <= 32) return k === 0 ? 0 : this.next32() >>> (32 - k);
    const low = this.next32();
    return (this.next32() >>> (64 - k)) * 4294967296 + low;
  }

  /** `_randbelow(n)`: uniform in [0, n) by rejection over bit_length(n) bits. */
  randbelow(n: number): number {
    if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`PythonRandom.randbelow: n must be a positive safe integer, got ${n}`);
    const k = n.toString(2).length;
    let r = this.getrandbits(k);
    while (r >= n) r = this.getrandbits(k);
    return r;
  }

  /** `choice(seq)`. */
  choice<T>(seq: readonly T[]): T {
    if (seq.length === 0) throw new RangeError('PythonRandom.choice: the sequence is empty');
    return seq[this.randbelow(seq.length)]!;
  }
}
