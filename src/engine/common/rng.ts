// Deterministic, serialisable random numbers (xoshiro128**), so a resumed run
// continues exactly where it stopped: the state is four uint32 words.

export type RngState = [number, number, number, number];

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Rng {
  private s: RngState;

  private constructor(state: RngState) {
    this.s = state;
  }

  static fromSeed(seed: number): Rng {
    const next = splitmix32(seed);
    const state: RngState = [next(), next(), next(), next()];
    if (state.every((w) => w === 0)) state[0] = 1;
    return new Rng(state);
  }

  static fromState(state: RngState): Rng {
    return new Rng([state[0] >>> 0, state[1] >>> 0, state[2] >>> 0, state[3] >>> 0]);
  }

  state(): RngState {
    return [...this.s];
  }

  /** Uniform uint32. */
  nextUint32(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] = (s[2] ^ s[0]) >>> 0;
    s[3] = (s[3] ^ s[1]) >>> 0;
    s[1] = (s[1] ^ s[2]) >>> 0;
    s[0] = (s[0] ^ s[3]) >>> 0;
    s[2] = (s[2] ^ t) >>> 0;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** Uniform in [0, 1) with 53 bits. */
  next(): number {
    const hi = this.nextUint32() >>> 5;
    const lo = this.nextUint32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0) throw new RangeError(`Rng.int needs a positive integer, got ${n}`);
    return Math.floor(this.next() * n);
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('Rng.pick from an empty list');
    return items[this.int(items.length)] as T;
  }

  /** Index drawn with probability proportional to weight (weights >= 0, not all 0). */
  weightedIndex(weights: readonly number[]): number {
    const total = weights.reduce((a, w) => a + Math.max(0, w), 0);
    if (!(total > 0)) throw new RangeError('Rng.weightedIndex needs a positive total weight');
    let r = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      r -= Math.max(0, weights[i] as number);
      if (r < 0) return i;
    }
    return weights.length - 1;
  }

  /** A derived generator, independent of this one's future draws. */
  fork(): Rng {
    return Rng.fromSeed(this.nextUint32());
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
