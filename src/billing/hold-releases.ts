// Releases for reserves given up on. A reserve that got no answer within REDIS_TIMEOUT_MS
// answers the client 503, but the command is still on its connection and runs once Redis
// answers again, holding money for a request that will never settle: until its lapse
// (RESERVATION_TTL_MS) it blocks the accounts, and its draft would have it recorded as lost
// one day. release.lua takes back what it held. It is sent on the same client right away: one
// connection's commands run in order, so it runs after the reserve; ioredis keeps that order
// across a reconnect (what was written and not answered is written again first, then the
// offline queue). A release not known to have run is sent again after each reconnect (ioredis
// may have dropped both from its queues after maxRetriesPerRequest, the reserve having run
// before): the client's `ready` comes after ioredis has sent again what it kept, so the new
// release runs after any reserve still to run. Running it twice changes nothing. One per
// client; a release older than a hold's lapse is forgotten (the hold has lapsed by then;
// decision 318).
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisScripts, ScriptKeys } from '../redis/scripts.js';

/** The rate buckets (KEYS key_rate, user_rate) the reserve counted the request in. */
export interface RatesCounted {
  readonly key: boolean;
  readonly user: boolean;
}

interface PendingRelease {
  readonly keys: ScriptKeys<'release'>;
  readonly heldNano: string;
  readonly rates: RatesCounted;
  readonly sinceMs: number;
  sending: boolean;
}

/** At most this many releases wait for a reconnect; the oldest go first (their holds lapse). */
const MAX_PENDING = 10_000;

export class HoldReleases {
  private readonly pending = new Map<string, PendingRelease>();

  constructor(
    redis: RedisClient,
    private readonly scripts: Pick<RedisScripts, 'release'>,
    private readonly forgetAfterMs: number,
    private readonly logger?: Logger,
  ) {
    redis.on('ready', () => this.sendAgain());
  }

  /**
   * Releases what the request's reserve of `heldNano` may hold, and the arrival it may have
   * counted in its rate buckets, now and after reconnects.
   */
  release(
    requestId: string,
    keys: ScriptKeys<'release'>,
    heldNano: bigint,
    rates: RatesCounted,
  ): void {
    const entry: PendingRelease = {
      keys,
      heldNano: heldNano.toString(),
      rates,
      sinceMs: Date.now(),
      sending: false,
    };
    this.pending.delete(requestId);
    this.pending.set(requestId, entry);
    if (this.pending.size > MAX_PENDING) {
      this.pending.delete(this.pending.keys().next().value!);
    }
    this.send(requestId, entry);
  }

  /** Releases not known to have run. */
  get waiting(): number {
    return this.pending.size;
  }

  private sendAgain(): void {
    const forgetBefore = Date.now() - this.forgetAfterMs;
    for (const [requestId, entry] of this.pending) {
      if (entry.sinceMs < forgetBefore) this.pending.delete(requestId);
      else if (!entry.sending) this.send(requestId, entry);
    }
  }

  private send(requestId: string, entry: PendingRelease): void {
    entry.sending = true;
    const args = {
      request_id: requestId,
      held_nano: entry.heldNano,
      key_rated: entry.rates.key ? '1' : '0',
      user_rated: entry.rates.user ? '1' : '0',
    };
    this.scripts.release(entry.keys, args).then(
      (result) => {
        if (this.pending.get(requestId) === entry) this.pending.delete(requestId);
        const [released, rates] = (result as [number, number]).map(Number);
        if (released! > 0 || rates! > 0) {
          this.logger?.info(
            { requestId, released, ratesGivenBack: rates },
            'released the holds of a reserve given up on',
          );
        }
      },
      (error: unknown) => {
        entry.sending = false;
        if ((error as Error | null)?.name === 'ReplyError') {
          // Refused by the script (a bug): sent again it would fail alike; the holds lapse.
          this.pending.delete(requestId);
          this.logger?.error({ err: error, requestId }, 'release of a reserve refused');
        }
        // Timed out (it is still on its connection, behind the reserve) or dropped with the
        // connection: sent again after the next reconnect.
      },
    );
  }
}
