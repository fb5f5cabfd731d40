// The one in-process cache every request-path lookup uses: a TTL per entry, an approximate LRU
// (second chance, so a hit writes nothing to the Map) bounded by entries and by (estimated)
// bytes, single-flight loading, negative entries for lookups that found nothing, and
// invalidation that a load already in flight cannot undo: a load that was running when its key
// (or the whole cache) was invalidated still answers its own callers, but its result is never
// stored, so a fill can never resurrect a revoked entry.
// Stale if error: an entry that merely expired is kept a while longer (staleIfErrorMs) and
// served when its reload fails (Postgres down), retried at most once a second meanwhile. Only
// expiry makes an entry stale: an invalidated entry (a revoked key, a changed cap) is gone.
import { estimateBytes } from './estimate-bytes.js';

export interface LocalCacheOptions<V> {
  /** Lifetime of a found value. 0 disables caching of values. */
  readonly ttlMs: number;
  /** Lifetime of a "not found" (negative) entry. 0: misses are not cached. */
  readonly negativeTtlMs: number;
  readonly maxEntries: number;
  readonly maxBytes: number;
  /** How long past its TTL an entry is served when reloading it fails (default 15 min). */
  readonly staleIfErrorMs?: number;
  /** Estimated heap bytes of one value (default: a structural estimate). */
  readonly sizeOf?: (value: V) => number;
  /** The clock (tests pass a fake one). */
  readonly now?: () => number;
}

export interface CacheGetOptions<V> {
  /** A cached value that fails this is treated as absent (and replaced by the load). */
  readonly accept?: (value: V) => boolean;
  /** Loads with different inputs for one key must not share a flight (default: the key). */
  readonly flightKey?: string;
}

export interface LocalCacheStats {
  hits: number;
  negativeHits: number;
  loads: number;
  evictions: number;
  /** Answers served from an expired entry because its reload failed. */
  staleServed: number;
  entries: number;
  bytes: number;
}

interface Entry<V> {
  /** undefined: a negative entry (the load found nothing). */
  readonly value: V | undefined;
  readonly expiresAtMs: number;
  /** Until then, an expired entry is served when its reload fails. */
  readonly staleUntilMs: number;
  readonly bytes: number;
  /** Read since eviction last passed it (second chance: see evictBeyondBounds). */
  used: boolean;
}

interface Flight<V> {
  readonly key: string;
  readonly promise: Promise<V | undefined>;
  /** Set when the key was invalidated while the load ran: its result is not stored. */
  invalidated: boolean;
}

const ENTRY_OVERHEAD_BYTES = 64;
const DEFAULT_STALE_IF_ERROR_MS = 15 * 60_000;
/** While a stale entry is served, its reload is tried at most this often. */
const STALE_RETRY_MS = 1_000;

export class LocalCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly flights = new Map<string, Flight<V>>();
  private readonly now: () => number;
  private readonly sizeOf: (value: V) => number;
  private bytes = 0;
  private readonly counters = { hits: 0, negativeHits: 0, loads: 0, evictions: 0, staleServed: 0 };

  constructor(private readonly options: LocalCacheOptions<V>) {
    this.now = options.now ?? Date.now;
    this.sizeOf = options.sizeOf ?? estimateBytes;
  }

  /** The cached value (or cached absence) of `key`, else what `load` finds, loaded once. */
  get(
    key: string,
    load: (key: string) => Promise<V | undefined>,
    options: CacheGetOptions<V> = {},
  ): Promise<V | undefined> {
    const entry = this.entries.get(key);
    let stale: Entry<V> | undefined;
    if (entry) {
      const now = this.now();
      if (entry.expiresAtMs <= now) {
        const acceptable =
          entry.value === undefined || !options.accept || options.accept(entry.value);
        if (now < entry.staleUntilMs && acceptable) stale = entry;
        else this.remove(key, entry);
      } else if (entry.value === undefined) {
        this.counters.negativeHits += 1;
        return Promise.resolve(undefined);
      } else if (!options.accept || options.accept(entry.value)) {
        this.counters.hits += 1;
        // Marked, not moved: a hit costs no Map writes (eviction gives it a second chance).
        entry.used = true;
        return Promise.resolve(entry.value);
      }
    }
    const flightKey = options.flightKey ?? key;
    const running = this.flights.get(flightKey);
    const loading = running ? running.promise : this.startFlight(key, flightKey, load);
    if (!stale) return loading;
    return loading.catch((error: unknown) => {
      const current = this.entries.get(key);
      // Invalidated meanwhile, or evicted: nothing stale may answer.
      if (current !== stale && current?.staleUntilMs !== stale.staleUntilMs) throw error;
      this.counters.staleServed += 1;
      if (current === stale) {
        this.entries.set(
          key,
          Object.assign({}, stale, { expiresAtMs: this.now() + STALE_RETRY_MS }),
        );
      }
      return stale.value;
    });
  }

  /** Forgets one key; a load of it already running will not store its result. */
  invalidate(key: string): void {
    const entry = this.entries.get(key);
    if (entry) this.remove(key, entry);
    for (const [flightKey, flight] of this.flights) {
      if (flight.key !== key) continue;
      flight.invalidated = true;
      this.flights.delete(flightKey);
    }
  }

  /** Forgets everything; no load already running will store its result. */
  invalidateAll(): void {
    this.entries.clear();
    this.bytes = 0;
    for (const flight of this.flights.values()) flight.invalidated = true;
    this.flights.clear();
  }

  stats(): LocalCacheStats {
    return { entries: this.entries.size, bytes: this.bytes, ...this.counters };
  }

  private startFlight(
    key: string,
    flightKey: string,
    load: (key: string) => Promise<V | undefined>,
  ): Promise<V | undefined> {
    this.counters.loads += 1;
    const flight: Flight<V> = {
      key,
      invalidated: false,
      promise: Promise.resolve()
        .then(() => load(key))
        .then(
          (value) => {
            this.endFlight(flightKey, flight);
            if (!flight.invalidated) this.store(key, value);
            return value;
          },
          (error: unknown) => {
            this.endFlight(flightKey, flight);
            throw error;
          },
        ),
    };
    this.flights.set(flightKey, flight);
    return flight.promise;
  }

  private endFlight(flightKey: string, flight: Flight<V>): void {
    if (this.flights.get(flightKey) === flight) this.flights.delete(flightKey);
  }

  private store(key: string, value: V | undefined): void {
    const ttlMs = value === undefined ? this.options.negativeTtlMs : this.options.ttlMs;
    const previous = this.entries.get(key);
    if (previous) this.remove(key, previous);
    if (ttlMs <= 0) return;
    const bytes =
      ENTRY_OVERHEAD_BYTES + key.length * 2 + (value === undefined ? 0 : this.sizeOf(value));
    // A value larger than the whole budget is served but never kept.
    if (bytes > this.options.maxBytes) return;
    const expiresAtMs = this.now() + ttlMs;
    const staleUntilMs = expiresAtMs + (this.options.staleIfErrorMs ?? DEFAULT_STALE_IF_ERROR_MS);
    this.entries.set(key, { value, expiresAtMs, staleUntilMs, bytes, used: false });
    this.bytes += bytes;
    this.evictBeyondBounds(key);
  }

  /**
   * Second-chance (CLOCK) eviction, an approximation of least-recently-used in which a hit
   * only marks its entry: from the oldest stored, an entry read since it was last passed is
   * moved to the newest end with its mark cleared, and the first unmarked one is evicted. The
   * entry just stored is passed over while any other remains.
   */
  private evictBeyondBounds(stored: string): void {
    while (this.entries.size > this.options.maxEntries || this.bytes > this.options.maxBytes) {
      const oldest = this.entries.entries().next();
      if (oldest.done) return;
      const [key, entry] = oldest.value;
      if ((entry.used || key === stored) && this.entries.size > 1) {
        entry.used = false;
        this.entries.delete(key);
        this.entries.set(key, entry);
        continue;
      }
      this.remove(key, entry);
      this.counters.evictions += 1;
    }
  }

  private remove(key: string, entry: Entry<V>): void {
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}
