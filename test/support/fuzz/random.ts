// A small seeded generator (mulberry32): the same seed always yields the same inputs, so a
// failing run can be replayed exactly with FUZZ_SEED.

export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, below). */
  int(below: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** Picks by weight: `[[weight, item], …]`. */
  weighted<T>(items: ReadonlyArray<readonly [number, T]>): T;
  /** A new array with the items in a seeded order. */
  shuffled<T>(items: readonly T[]): T[];
  /** `length` characters from [0-9A-Za-z]. */
  alnum(length: number): string;
}

const ALNUM = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (below: number): number => Math.floor(next() * below);
  return {
    next,
    int,
    chance: (p) => next() < p,
    pick: (items) => items[int(items.length)]!,
    weighted(items) {
      const total = items.reduce((sum, [weight]) => sum + weight, 0);
      let point = next() * total;
      for (const [weight, item] of items) {
        point -= weight;
        if (point < 0) return item;
      }
      return items[items.length - 1]![1];
    },
    shuffled(items) {
      const copy = [...items];
      for (let index = copy.length - 1; index > 0; index -= 1) {
        const other = int(index + 1);
        [copy[index], copy[other]] = [copy[other]!, copy[index]!];
      }
      return copy;
    },
    alnum: (length) => Array.from({ length }, () => ALNUM[int(ALNUM.length)]).join(''),
  };
}
