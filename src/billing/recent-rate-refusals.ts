// The API keys this instance's reserves have just found past their own requests-per-minute
// limit, and until when that limit refuses them (docs/decisions.md 347). Admission asks before
// it looks up the request's product user and counts its tokens, so a flood on a key past its
// limit is refused without a Postgres write (a product user seen for the first time, a changed
// profile) or the tokenizer's work, and with the answer the reserve would give.
//
// Why an entry is safe to answer from: a bucket's arrival time only moves forward (arrivals
// push it; time drains the debt towards it), so a reserve refused at now_ms with a wait of w ms
// means every request before now_ms + w is refused too, under the same limit. The entry is
// per key and limit: a changed limit is checked in Redis afresh, a cleared one not at all.
// For the same reason the bucket's TAT stays where it was until then (nothing passes to push
// it), so when it is full again (the rate-limit headers' reset, decision 353) is exact too.
// (A reserve given up on gives its arrival back, moving the TAT back by one request: then an
// entry may refuse for up to one request's interval more than the bucket would; decision 362.)
//
// A product user's bucket under a key is remembered too (`productUserBucket`), by the external
// id the request named, which admission knows before it looks the user up: it only ever
// lengthens a known refusal of the key, when the user's own wait is the longer one, as the
// reserve answers the longer of two refusals (decision 362). Alone it answers nothing: the
// product user's refusal is asked of Redis, as before (decision 347).

/** Entries kept at most (a few hundred bytes each): past it the oldest go first. */
const MAX_ENTRIES = 10_000;

export interface KnownRateRefusal {
  readonly limitPerMinute: number;
  /** How long the key's limit still refuses it (ms from `nowMs`). */
  readonly retryAfterMs: number;
  /** How long until the key's bucket is full again (ms from `nowMs`). */
  readonly resetMs: number;
}

interface RefusalTimes {
  /** The first ms at which a request may pass again. */
  readonly passesAtMs: number;
  /** The ms at which the bucket is full again. */
  readonly fullAtMs: number;
}

/** The bucket of the product user named `externalUserId` under an API key, as remembered. */
export const productUserBucket = (apiKeyId: string, externalUserId: string): string =>
  `${apiKeyId}/pu/${externalUserId}`;

export class RecentRateRefusals {
  /**
   * '<bucket> <limit>' → when the refusal ends, and when the bucket is full again. A bucket is
   * an API key's id, or `productUserBucket` (key ids have no '/'; the limit, after the last
   * space, has none).
   */
  private readonly entries = new Map<string, RefusalTimes>();

  constructor(private readonly maxEntries = MAX_ENTRIES) {}

  /** The reserve at `nowMs` refused the bucket by `refusal` (its waits from `nowMs`). */
  remember(bucket: string, nowMs: number, refusal: KnownRateRefusal): void {
    const entry = `${bucket} ${refusal.limitPerMinute}`;
    this.entries.delete(entry); // re-inserted last: the oldest entries are the first ones
    if (this.entries.size >= this.maxEntries) this.makeRoom(nowMs);
    this.entries.set(entry, {
      passesAtMs: nowMs + refusal.retryAfterMs,
      fullAtMs: nowMs + refusal.resetMs,
    });
  }

  /** The refusal still running for this bucket and limit at `nowMs`, if one is known. */
  refusal(bucket: string, limitPerMinute: number, nowMs: number): KnownRateRefusal | undefined {
    const entry = `${bucket} ${limitPerMinute}`;
    const times = this.entries.get(entry);
    if (times === undefined) return undefined;
    if (times.passesAtMs <= nowMs) {
      this.entries.delete(entry);
      return undefined;
    }
    return {
      limitPerMinute,
      retryAfterMs: times.passesAtMs - nowMs,
      resetMs: times.fullAtMs - nowMs,
    };
  }

  get size(): number {
    return this.entries.size;
  }

  /** Drops the lapsed entries, then the oldest ones down to 9/10 of the bound (amortised). */
  private makeRoom(nowMs: number): void {
    for (const [entry, times] of this.entries) {
      if (times.passesAtMs <= nowMs) this.entries.delete(entry);
    }
    const keep = Math.floor(this.maxEntries * 0.9);
    for (const entry of this.entries.keys()) {
      if (this.entries.size <= keep) break;
      this.entries.delete(entry);
    }
  }
}
