/**
 * CPython's random.Random(seed) (src/util/python-random.ts) against outputs of CPython 3 itself:
 * random(), getrandbits and choice (through _randbelow) for small and multi-word seeds.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PythonRandom } from '../../src/util/python-random.ts';

// python3 -c 'import random; print([random.Random(s).choice(list(range(224,545,32))) for s in range(20)])'
const CHOICES_0_19 = [416, 288, 224, 320, 320, 512, 512, 384, 320, 448, 512, 448, 448, 352, 256, 320, 384, 480, 288, 544];
const SCALES_N = Array.from({ length: 11 }, (_, o) => 224 + 32 * o);

describe('CPython random.Random', () => {
  it('random() of seed 0 is 0.8444218515250481', () => {
    assert.equal(new PythonRandom(0).random(), 0.8444218515250481);
  });

  it('choice over the nano scales, seeds 0..19, as CPython', () => {
    assert.deepEqual(Array.from({ length: 20 }, (_, s) => new PythonRandom(s).choice(SCALES_N)), CHOICES_0_19);
  });

  it('seeds of several 32-bit words, and |seed| for a negative one', () => {
    // [random.Random(s).choice(range(224,545,32)) for s in (12345, 2**32+7, 2**40, 10**6)]
    assert.deepEqual([12345, 2 ** 32 + 7, 2 ** 40, 1e6].map((s) => new PythonRandom(s).choice(SCALES_N)), [416, 320, 256, 256]);
    assert.equal(new PythonRandom(-3).random(), new PythonRandom(3).random());
  });

  it('getrandbits(32), getrandbits(64 -> 53 max here) and random() in sequence', () => {
    // r = random.Random(5); r.getrandbits(32), r.getrandbits(64), r.random() -> 2675342405, 13683554807294777401, 0.35853551175589526
    const r = new PythonRandom(5);
    assert.equal(r.getrandbits(32), 2675342405);
    // 13683554807294777401 >> 11 (the top 53 of those 64 bits come from the same two words)
    const low = r.getrandbits(32), high = r.getrandbits(32);
    assert.equal(BigInt(high) * 2n ** 32n + BigInt(low), 13683554807294777401n);
    assert.equal(r.random(), 0.35853551175589526);
  });

  it('bad input is refused', () => {
    assert.throws(() => new PythonRandom(0.5), /safe integer/);
    assert.throws(() => new PythonRandom(1).choice([]), /empty/);
    assert.throws(() => new PythonRandom(1).getrandbits(54), /0\.\.53/);
  });
});
