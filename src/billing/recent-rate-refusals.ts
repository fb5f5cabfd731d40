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

/** Entries kept at most (a few hundred bytes each): past it the oldest go first. */
const MAX_ENTRIES = 10_000;

export interface KnownRateRefusal {
  readonly limitPerMinute: number;
  /** How long the key's limit still refuses it (ms from `nowMs`). */
  readonly retryAfterMs: number;
}

export class RecentRateRefusals {
  /** '<api key id> <limit>' → the first ms at which a request may pass again. */
  private readonly passesAtMs = new Map<string, number>();

  constructor(private readonly maxEntries = MAX_ENTRIES) {}

  /** The reserve at `nowMs` refused the key's bucket of `limitPerMinute` for `waitMs`. */
  remember(apiKeyId: string, limitPerMinute: number, nowMs: number, waitMs: number): void {
    const entry = `${apiKeyId} ${limitPerMinute}`;
    this.passesAtMs.delete(entry); // re-inserted last: the oldest entries are the first ones
    if (this.passesAtMs.size >= this.maxEntries) this.makeRoom(nowMs);
    this.passesAtMs.set(entry, nowMs + waitMs);
  }

  /** The refusal still running for this key and limit at `nowMs`, if one is known. */
  refusal(apiKeyId: string, limitPerMinute: number, nowMs: number): KnownRateRefusal | undefined {
    const entry = `${apiKeyId} ${limitPerMinute}`;
    const passesAtMs = this.passesAtMs.get(entry);
    if (passesAtMs === undefined) return undefined;
    if (passesAtMs <= nowMs) {
      this.passesAtMs.delete(entry);
      return undefined;
    }
    return { limitPerMinute, retryAfterMs: passesAtMs - nowMs };
  }

  get size(): number {
    return this.passesAtMs.size;
  }

  /** Drops the lapsed entries, then the oldest ones down to 9/10 of the bound (amortised). */
  private makeRoom(nowMs: number): void {
    for (const [entry, passesAtMs] of this.passesAtMs) {
      if (passesAtMs <= nowMs) this.passesAtMs.delete(entry);
    }
    const keep = Math.floor(this.maxEntries * 0.9);
    for (const entry of this.passesAtMs.keys()) {
      if (this.passesAtMs.size <= keep) break;
      this.passesAtMs.delete(entry);
    }
  }
}
