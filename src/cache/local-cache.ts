// The one in-process cache every request-path lookup uses: a TTL per entry, an LRU bounded by
// entries and by (estimated) bytes, single-flight loading, negative entries for lookups that
// found nothing, and invalidation that a load already in flight cannot undo: a load that was
// running when its key (or the whole cache) was invalidated still answers its own callers,
// but its result is never stored, so a fill can never resurrect a revoked entry.
import { estimateBytes } from './estimate-bytes.js';

export interface LocalCacheOptions<V> {
  /** Lifetime of a found value. 0 disables caching of values. */
  readonly ttlMs: number;
  /** Lifetime of a "not found" (negative) entry. 0: misses are not cached. */
  readonly negativeTtlMs: number;
  readonly maxEntries: number;
  readonly maxBytes: number;
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
  entries: number;
  bytes: number;
}

interface Entry<V> {
  /** undefined: a negative entry (the load found nothing). */
  readonly value: V | undefined;
  readonly expiresAtMs: number;
  readonly bytes: number;
}

interface Flight<V> {
  readonly key: string;
  readonly promise: Promise<V | undefined>;
  /** Set when the key was invalidated while the load ran: its result is not stored. */
  invalidated: boolean;
}

const ENTRY_OVERHEAD_BYTES = 64;

export class LocalCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly flights = new Map<string, Flight<V>>();
  private readonly now: () => number;
  private readonly sizeOf: (value: V) => number;
  private bytes = 0;
  private readonly counters = { hits: 0, negativeHits: 0, loads: 0, evictions: 0 };

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
    if (entry) {
      if (entry.expiresAtMs <= this.now()) {
        this.remove(key, entry);
      } else if (entry.value === undefined) {
        this.counters.negativeHits += 1;
        return Promise.resolve(undefined);
      } else if (!options.accept || options.accept(entry.value)) {
        this.counters.hits += 1;
        // Most recently used last: eviction takes the first.
        this.entries.delete(key);
        this.entries.set(key, entry);
        return Promise.resolve(entry.value);
      }
    }
    const flightKey = options.flightKey ?? key;
    const running = this.flights.get(flightKey);
    if (running) return running.promise;
    return this.startFlight(key, flightKey, load);
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
    return { ...this.counters, entries: this.entries.size, bytes: this.bytes };
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
    this.entries.set(key, { value, expiresAtMs: this.now() + ttlMs, bytes });
    this.bytes += bytes;
    this.evictBeyondBounds();
  }

  private evictBeyondBounds(): void {
    while (this.entries.size > this.options.maxEntries || this.bytes > this.options.maxBytes) {
      const oldest = this.entries.entries().next();
      if (oldest.done) return;
      this.remove(oldest.value[0], oldest.value[1]);
      this.counters.evictions += 1;
    }
  }

  private remove(key: string, entry: Entry<V>): void {
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}
