// What both key stores share about reaching Postgres on a cache miss: an injectable records
// port, a gate that sheds a flood of uncached keys with a 503 instead of queueing it, and the
// local cache in front of both.
import { LoadGate, LoadGateFull } from '../cache/load-gate.js';
import { LocalCache } from '../cache/local-cache.js';
import { gwError, type GwError } from '../errors.js';

export interface KeyLookupOptions<Records> {
  /** How the store reads Postgres on a miss (tests pass a port that counts or pauses). */
  readonly records?: Records;
  /** Postgres lookups of uncached keys in flight at once, per instance. */
  readonly maxConcurrentLookups?: number;
  /** Lookups queued behind those; beyond, the request answers 503 gw_unavailable. */
  readonly maxWaitingLookups?: number;
}

/**
 * Misses are kept briefly. A new key cannot be shadowed by one: its hash comes from a fresh
 * random secret that nobody could have presented before it existed.
 */
export const NEGATIVE_TTL_MS = 5_000;

/** A store's local cache of keys by hash, bounded by entries and bytes. */
export function keyCache<Value>(
  ttlMs: number,
  bounds: { readonly maxEntries: number; readonly maxBytes: number },
): LocalCache<Value> {
  return new LocalCache({ ttlMs, negativeTtlMs: Math.min(ttlMs, NEGATIVE_TTL_MS), ...bounds });
}

const DEFAULT_MAX_CONCURRENT_LOOKUPS = 8;
const DEFAULT_MAX_WAITING_LOOKUPS = 256;

export function keyLookupGate(options: KeyLookupOptions<unknown>): LoadGate {
  return new LoadGate(
    options.maxConcurrentLookups ?? DEFAULT_MAX_CONCURRENT_LOOKUPS,
    options.maxWaitingLookups ?? DEFAULT_MAX_WAITING_LOOKUPS,
  );
}

/** The lookup's result, or 503 gw_unavailable when the gate refused it. */
export async function shedWhenGateFull<T>(lookup: Promise<T>): Promise<{ value: T } | GwError> {
  try {
    return { value: await lookup };
  } catch (error) {
    if (!(error instanceof LoadGateFull)) throw error;
    return gwError(
      'gw_unavailable',
      'too many lookups of uncached keys are in flight on this instance; retry shortly',
    );
  }
}
