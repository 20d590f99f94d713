/**
 * mulberry32, a small deterministic PRNG: the generated test model's weights and the
 * benchmark corpus must be byte-for-byte the same in every run.
 */

/** Returns a generator of floats in [0, 1) fixed by `seed`. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
