// Requests lost with their instance. A held request leaves a draft beside its holds
// (reserve.lua writes it into the org's in-flight hash, settle.lua removes it): the settle that
// records it as lost (`gateway_lost`, nothing charged: docs/charging.md). Every instance beats
// in the instances set; one that has gone silent is dead (killed, out of memory), and the
// others settle its drafts once their holds have lapsed (RESERVATION_TTL_MS after the hold):
// never sooner, so a request still running on an instance that only lost Redis for a while is
// not recorded twice (settle is idempotent by request id: the first record wins). Then the
// ledger has a row for every request that was held, the dead instance's included.
// A heartbeat is only judged over time the judge could beat itself: after a Redis outage every
// heartbeat is stale (nobody could write one), so an instance takes others for dead only once
// its own beats have gone through, without a gap, for INSTANCE_DEAD_AFTER_MS (decision 585).
// The beats run on a timer of their own: a sweep, however long its scan, never holds one back
// (decision 590). One instance scans at a time, under a lock that names its holder: a scan
// renews it while it runs, stops when it lost it, and releases only its own (decision 595).
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/connect.js';
import { orgOfUsageStream, type RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import type { UsageRecord } from '../ledger/usage-record.js';
import type { BudgetStore } from './budget-store.js';
import { decodeDraft, type InFlightDraft } from './in-flight-draft.js';

export interface LostRequestOptions {
  /** This instance (the name its requests' drafts carry). */
  readonly instanceId: string;
  /** An instance whose heartbeat is older than this is dead; it beats six times as often. */
  readonly deadAfterMs: number;
  /** Counts the lost requests this instance records (gw_lost_requests_recorded_total). */
  readonly recorded?: { inc(count: number): void };
}

export interface LostRequestSweep {
  /** Lost requests recorded by this sweep. */
  readonly settled: number;
  /** Drafts of dead instances whose holds have not lapsed yet (a later sweep takes them). */
  readonly waiting: number;
}

const SCAN_COUNT = 200;

/** The sweep's lock as its taker holds it: its token, lifetime, and when last known its own. */
interface SweepLock {
  readonly token: string;
  readonly ttlMs: number;
  /** performance.now() when the lock was last set or renewed (sent: its lifetime ran later). */
  heldSinceMs: number;
}

export class LostRequestRecovery {
  private beatTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  /** The beat and the sweep under way, if any: each waits for its own before the next. */
  private beating: Promise<void> | undefined;
  private running: Promise<void> | undefined;
  /** The dead instances the last scan looked for, and when the first draft it left lapses. */
  private scanned = { dead: new Set<string>(), nextLapseAtMs: Infinity };
  private stopping = false;
  /**
   * When this instance's beats started going through without a gap (undefined: none yet, or
   * the last one failed), and when the last one was answered (the clock `beat` is given).
   */
  private beatingSinceMs: number | undefined;
  private lastBeatAtMs: number | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly scripts: Pick<RedisScripts, 'sweepLock'>,
    private readonly keys: RedisKeys,
    private readonly budget: Pick<BudgetStore, 'settle'>,
    private readonly logger: Logger,
    private readonly options: LostRequestOptions,
  ) {}

  /**
   * Beats once (so the instance is alive before it serves), then beats and sweeps, each on a
   * timer of its own: a scan that runs long (many orgs, a slow Redis) must not hold back this
   * instance's heartbeat, or the others take it for dead and record its requests lost.
   */
  async start(): Promise<void> {
    await this.beat();
    const interval = Math.max(100, Math.floor(this.options.deadAfterMs / 6));
    this.beatTimer = setInterval(() => this.beatTick(), interval);
    this.beatTimer.unref();
    this.sweepTimer = setInterval(() => this.sweepTick(), interval);
    this.sweepTimer.unref();
  }

  /**
   * Stops beating. `leave`: nothing of this instance is in flight any more, so it leaves the
   * set; otherwise it stays there, silent, and the others settle what it left once it lapses.
   */
  async stop(leave: boolean): Promise<void> {
    this.stopping = true; // a scan under way stops at the next org, leaving the rest for others
    clearInterval(this.beatTimer);
    clearInterval(this.sweepTimer);
    await Promise.all([this.beating, this.running]);
    if (leave) await this.redis.zrem(this.keys.instances(), this.options.instanceId);
  }

  /** A beat, unless the one before is still waiting for its answer (beats never overlap). */
  private beatTick(): void {
    if (this.beating) return;
    this.beating = this.beat()
      .catch((error: unknown) => this.logger.warn({ err: error }, 'instance heartbeat failed'))
      .finally(() => {
        this.beating = undefined;
      });
  }

  /** A sweep, unless the one before is still scanning; it judges from the beats so far. */
  private sweepTick(): void {
    if (this.running) return;
    this.running = this.sweep()
      .then((sweep) => {
        if (sweep.settled > 0) {
          this.options.recorded?.inc(sweep.settled);
          this.logger.warn({ settled: sweep.settled }, 'recorded requests lost with an instance');
        }
      })
      .catch((error: unknown) => this.logger.warn({ err: error }, 'lost-request sweep failed'))
      .finally(() => {
        this.running = undefined;
      });
  }

  async beat(now = Date.now()): Promise<void> {
    const sentAt = performance.now();
    try {
      await this.redis.zadd(this.keys.instances(), now, this.options.instanceId);
    } catch (error) {
      this.beatingSinceMs = undefined;
      throw error;
    }
    // Answered, not sent: a beat that waited in the client's queue through an outage is
    // answered after it, and says nothing of the time it waited.
    const answeredAtMs = now + (performance.now() - sentAt);
    if (
      this.beatingSinceMs === undefined ||
      this.lastBeatAtMs === undefined ||
      answeredAtMs - this.lastBeatAtMs > this.maxBeatGapMs()
    ) {
      this.beatingSinceMs = answeredAtMs;
    }
    this.lastBeatAtMs = answeredAtMs;
  }

  /**
   * Whether this instance has reached Redis long enough to judge others' heartbeats: its own
   * beats have gone through for INSTANCE_DEAD_AFTER_MS, none more than half of it after the
   * one before (a beat comes every sixth; a slow answer may hold the next back a little: beats
   * do not overlap; a scan holds none back, they run on their own timer). Until then a
   * stale heartbeat may only say that its instance could not reach Redis, as this one could
   * not: after an outage each instance comes back on its own back-off, and the first one back
   * would take the others for dead. An instance cut off alone is still taken for dead by the
   * others, which kept beating, once the bound has passed. On a cluster the heartbeats are one
   * key: this instance's beats reach the node the others' would.
   */
  private judgesHeartbeats(now: number): boolean {
    return (
      this.beatingSinceMs !== undefined &&
      this.lastBeatAtMs !== undefined &&
      now - this.lastBeatAtMs <= this.maxBeatGapMs() &&
      now - this.beatingSinceMs >= this.options.deadAfterMs
    );
  }

  private maxBeatGapMs(): number {
    return this.options.deadAfterMs / 2;
  }

  /**
   * Settles the lapsed drafts of every dead instance; forgets the ones with none left. Nothing
   * until this instance's own beats have gone through for INSTANCE_DEAD_AFTER_MS.
   */
  async sweep(now = Date.now()): Promise<LostRequestSweep> {
    if (!this.judgesHeartbeats(now)) return { settled: 0, waiting: 0 };
    const dead = (
      await this.redis.zrangebyscore(this.keys.instances(), '-inf', now - this.options.deadAfterMs)
    ).filter((instance) => instance !== this.options.instanceId);
    if (dead.length === 0) return { settled: 0, waiting: 0 };
    // Every registered org is scanned, so not on every tick: only when an instance died since
    // the last scan or a draft that scan left has lapsed since; and one instance at a time.
    const known = dead.every((instance) => this.scanned.dead.has(instance));
    if (known && now < this.scanned.nextLapseAtMs) return { settled: 0, waiting: 0 };
    // The lock's value names its holder and this take: the taker renews it and releases it
    // only while it is still this value (sweep-lock.lua), never another instance's lock.
    const lock: SweepLock = {
      token: `${this.options.instanceId} ${randomUUID()}`,
      ttlMs: Math.max(this.options.deadAfterMs, 10_000),
      heldSinceMs: performance.now(),
    };
    const key = this.keys.instanceSweep();
    if ((await this.redis.set(key, lock.token, 'PX', lock.ttlMs, 'NX')) !== 'OK') {
      return { settled: 0, waiting: 0 };
    }
    try {
      return await this.scan(dead, now, lock);
    } finally {
      await this.scripts.sweepLock({ lock: key }, { token: lock.token, ttl_ms: 0 });
    }
  }

  /**
   * Whether this scan still holds its lock, renewed here once a third of its lifetime has
   * passed since it was set or last renewed (it can only have lapsed after all of it); `check`:
   * asked of Redis whatever the time. A scan that lost it stops and concludes nothing: another
   * instance may be scanning now.
   */
  private async holdsLock(lock: SweepLock, check = false): Promise<boolean> {
    if (!check && performance.now() - lock.heldSinceMs < lock.ttlMs / 3) return true;
    const sentAtMs = performance.now();
    const kept = await this.scripts.sweepLock(
      { lock: this.keys.instanceSweep() },
      { token: lock.token, ttl_ms: lock.ttlMs },
    );
    if (kept === 1) {
      lock.heldSinceMs = sentAtMs;
      return true;
    }
    this.logger.warn(
      'lost-request sweep: its lock lapsed during the scan; stopped, left to others',
    );
    return false;
  }

  private async scan(
    dead: readonly string[],
    now: number,
    lock: SweepLock,
  ): Promise<LostRequestSweep> {
    const deadSet = new Set(dead);
    let nextLapseAtMs = Infinity;
    const waitingOf = new Map<string, number>();
    let settled = 0;
    for (const stream of await this.redis.smembers(this.keys.usageStreamRegistry())) {
      // Nothing concluded from half a scan.
      if (this.stopping || !(await this.holdsLock(lock))) return { settled, waiting: 0 };
      const orgId = orgOfUsageStream(this.keys, stream);
      if (orgId === null) continue;
      const key = this.keys.inFlight(orgId);
      let cursor = '0';
      do {
        const [next, entries] = await this.redis.hscan(key, cursor, 'COUNT', SCAN_COUNT);
        cursor = next;
        for (let index = 0; index + 1 < entries.length; index += 2) {
          const requestId = entries[index]!;
          const draft = this.readDraft(requestId, entries[index + 1]!);
          if (!draft || !deadSet.has(draft.instance)) continue;
          const waitUntil = (atMs: number): void => {
            waitingOf.set(draft.instance, (waitingOf.get(draft.instance) ?? 0) + 1);
            nextLapseAtMs = Math.min(nextLapseAtMs, atMs);
          };
          if (draft.lapsesAtMs > now) {
            waitUntil(draft.lapsesAtMs);
            continue;
          }
          if (!(await this.holdsLock(lock))) return { settled, waiting: 0 };
          try {
            if ((await this.settleLost(draft, now)) === 'settled') settled += 1;
          } catch (error) {
            // Left in place, its instance still listed, and tried again a while later: fix the
            // cause and a later sweep records it.
            this.logger.error(
              { err: error, requestId, instance: draft.instance },
              'a lost request could not be recorded',
            );
            waitUntil(now + this.options.deadAfterMs);
          }
        }
      } while (cursor !== '0');
    }
    if (!(await this.holdsLock(lock, true))) return { settled, waiting: 0 };
    const gone = dead.filter((instance) => !waitingOf.has(instance));
    if (gone.length > 0) await this.redis.zrem(this.keys.instances(), ...gone);
    this.scanned = { dead: deadSet, nextLapseAtMs };
    let waiting = 0;
    for (const count of waitingOf.values()) waiting += count;
    return { settled, waiting };
  }

  /**
   * Settles a lost request as its draft says, naming the credential that served it. Dated at
   * its admission, as the record it would have settled (its accounts' periods; decision 402),
   * its latency running until now.
   */
  private settleLost(draft: LostDraft, now: number): Promise<'settled' | 'already_settled'> {
    const record: UsageRecord = Object.assign({}, draft.record, {
      latencyMs: Math.max(0, now - draft.record.createdAt.getTime()),
      route: draft.credentialId ? ('byok' as const) : ('system' as const),
      credentialId: draft.credentialId,
    });
    return this.budget.settle(record, draft.accounts);
  }

  /** An in-flight entry ('<credential_id>\n<draft>', reserve.lua); null (logged) if unreadable. */
  private readDraft(requestId: string, value: string): LostDraft | null {
    const newline = value.indexOf('\n');
    try {
      if (newline < 0) throw new Error('an in-flight entry without its credential line');
      return {
        credentialId: value.slice(0, newline) || null,
        ...decodeDraft(value.slice(newline + 1)),
      };
    } catch (error) {
      this.logger.error({ err: error, requestId }, 'an in-flight draft cannot be read');
      return null;
    }
  }
}

/** A draft and the credential reserve.lua picked for it. */
type LostDraft = InFlightDraft & { readonly credentialId: string | null };
