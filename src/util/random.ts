/** mulberry32: a small, fast, seedable PRNG giving uniform [0, 1) from a 32-bit seed. Every seeded
 * piece of the package (fresh weights, augmentation, synthetic data) draws from it, so runs
 * reproduce bit for bit. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
