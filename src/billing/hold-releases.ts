// Releases for reserves given up on. A reserve that got no answer within REDIS_TIMEOUT_MS (or
// whose connection closed before its answer) answers the client 503, but the command is still
// on its connection and may run once Redis answers again, holding money for a request that
// will never settle: until its lapse (RESERVATION_TTL_MS) it blocks the accounts, and its
// draft would have it recorded as lost one day. release.lua takes back what it held. It is
// sent on the same client right away: one connection's commands run in order, so it runs after
// the reserve; ioredis keeps that order across a reconnect too (what was sent and not answered
// is sent again first, then its offline queue). Until one release is answered it is sent
// again every `retryMs` (it changes nothing the second time): a release that fails with the
// connection (ioredis dropping its queues after maxRetriesPerRequest) may have been dropped
// while the reserve had already run (decision 31A).
import type { Logger } from '../log.js';
import type { RedisScripts, ScriptKeys } from '../redis/scripts.js';

interface PendingRelease {
  readonly keys: ScriptKeys<'release'>;
  readonly heldNano: string;
  sending: boolean;
}

export class HoldReleases {
  private readonly pending = new Map<string, PendingRelease>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly scripts: Pick<RedisScripts, 'release'>,
    private readonly retryMs: number,
    private readonly logger?: Logger,
  ) {}

  /** Releases what the request's reserve of `heldNano` may hold, now and until answered. */
  release(requestId: string, keys: ScriptKeys<'release'>, heldNano: bigint): void {
    const entry: PendingRelease = { keys, heldNano: heldNano.toString(), sending: false };
    this.pending.set(requestId, entry);
    this.send(requestId, entry);
  }

  /** Releases not answered yet. */
  get waiting(): number {
    return this.pending.size;
  }

  private send(requestId: string, entry: PendingRelease): void {
    entry.sending = true;
    this.scripts.release(entry.keys, { request_id: requestId, held_nano: entry.heldNano }).then(
      (result) => {
        this.pending.delete(requestId);
        const released = Number((result as [number])[0]);
        if (released > 0) {
          this.logger?.info({ requestId, released }, 'released the holds of a reserve given up on');
        }
      },
      (error: unknown) => {
        entry.sending = false;
        if ((error as Error | null)?.name === 'ReplyError') {
          // Refused by the script (a bug): sending it again would fail alike; the holds lapse.
          this.pending.delete(requestId);
          this.logger?.error({ err: error, requestId }, 'release of a reserve refused');
          return;
        }
        this.retryLater();
      },
    );
  }

  private retryLater(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      for (const [requestId, entry] of this.pending) {
        if (!entry.sending) this.send(requestId, entry);
      }
    }, this.retryMs);
    this.timer.unref();
  }
}
