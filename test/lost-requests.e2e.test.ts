// Requests lost with their instance: a gateway killed while a request is held leaves its draft
// beside the holds; another instance records it (`gateway_lost`, nothing charged) once the
// instance is silent and the holds have lapsed, so the ledger has a row for every held request.
// And never sooner: not while the instance beats, not before the holds lapse.
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LostRequestRecovery } from '../src/billing/lost-requests.js';
import { createRedisKeys } from '../src/redis/keys.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import type { BudgetStore, RequestAccounts, SettleAccounts } from '../src/billing/budget-store.js';
import { decodeDraft, encodeDraft } from '../src/billing/in-flight-draft.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { defineScripts } from '../src/redis/scripts.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson } from './support/http.js';
import {
  metricsUrl,
  seed,
  startGateway,
  startGatewayProcess,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';
import { lostRecord } from './support/records.js';

const { env, db, redis, prefix } = isolatedContext('lost');
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const lapse = { RESERVATION_TTL_MS: '2000', INSTANCE_DEAD_AFTER_MS: '1200' };
let org: SeededOrg;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  org = await seed(env);
});

afterAll(async () => {
  await Promise.all(running.map((gateway) => gateway.stop()));
});

const walletReserved = async (): Promise<string | null> =>
  redis.hget(keys.wallet(org.org_id), 'reserved');

describe('requests lost with their instance', () => {
  it('are each recorded by another instance once their holds lapse: gateway_lost, nothing charged', async () => {
    const doomed = await startGatewayProcess({ ...env, ...lapse });
    running.push(doomed);
    // A request that settles removes its draft.
    const done = await postJson(
      `${doomed.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'settles' }] },
      bearer(org.api_key),
    );
    expect(done.status).toBe(200);
    expect(await redis.hlen(keys.inFlight(org.org_id))).toBe(0);
    const balanceBefore = await redis.hget(keys.wallet(org.org_id), 'balance');

    // Requests the vendor takes its time with (JSON and streams): held, then their instance is
    // killed. Every one of them must come back as a record.
    const LOST = 12;
    const lost = Array.from({ length: LOST }, (_, index) =>
      postJson(
        `${doomed.url}/v1/chat/completions`,
        {
          model: 'vendor_b/gpt-4o-mini',
          ...(index % 2 === 1 && { stream: true }),
          messages: [{ role: 'user', content: `lost ${index} mock:latency_ms=10000` }],
        },
        bearer(org.api_key),
      ).catch((error: unknown) => error),
    );
    const drafts = await eventually(async () => {
      const entries = Object.entries(await redis.hgetall(keys.inFlight(org.org_id)));
      return entries.length === LOST ? entries : undefined;
    }, 10_000);
    // The system route serves them: no credential on the draft's first line.
    expect(drafts.map(([, draft]) => draft.split('\n')[0])).toEqual(Array(LOST).fill(''));
    expect(Number(await walletReserved())).toBeGreaterThan(0);
    await doomed.stop('SIGKILL');
    for (const outcome of await Promise.all(lost)) expect(outcome).toBeInstanceOf(Error); // dropped

    const survivor = await startGateway({
      ...env,
      ...lapse,
      USAGE_CLAIM_IDLE_MS: '1000',
      METRICS_ENABLED: 'true',
      METRICS_PORT: '0',
    });
    running.push(survivor);
    const requestIds = drafts.map(([requestId]) => requestId);
    const rows = await eventually(async () => {
      const { rows: found } = await db.query(
        `SELECT status, end_reason, input_tokens, output_tokens, sell_cost::text,
                wallet_cost::text, reserved_amount > 0 AS held, route, stream, model, api_key_id
           FROM usage_records WHERE request_id = ANY($1::uuid[]) ORDER BY stream`,
        [requestIds],
      );
      return found.length === LOST ? found : undefined;
    }, 20_000);
    expect(rows).toEqual(
      [false, true].flatMap((stream) =>
        Array<unknown>(LOST / 2).fill({
          status: 'incomplete',
          end_reason: 'gateway_lost',
          input_tokens: 0,
          output_tokens: 0,
          sell_cost: '0.000000000000',
          wallet_cost: '0.000000000000',
          held: true,
          route: 'system',
          stream,
          model: 'vendor_b/gpt-4o-mini',
          api_key_id: expect.any(String),
        }),
      ),
    );
    // Every request the org sent has its row: the one completed and the ones lost. The
    // completed one's record may have been in the killed instance's writer, read and not yet
    // committed: the survivor claims it once it has been idle USAGE_CLAIM_IDLE_MS.
    const expected = [
      { end_reason: 'completed', n: 1 },
      { end_reason: 'gateway_lost', n: LOST },
    ];
    const ledger = async (): Promise<unknown[]> =>
      (
        await db.query(
          `SELECT end_reason, count(*)::int AS n FROM usage_records WHERE org_id = $1
            GROUP BY end_reason ORDER BY end_reason`,
          [org.org_id],
        )
      ).rows;
    const settled = async () =>
      JSON.stringify(await ledger()) === JSON.stringify(expected) ? true : undefined;
    await eventually(settled, 20_000).catch(() => undefined); // the assertion below says what
    expect(await ledger()).toEqual(expected);
    // Its hold is gone, nothing was charged, its draft is gone and so is the dead instance.
    expect(await walletReserved()).toBe('0');
    expect(await redis.hget(keys.wallet(org.org_id), 'balance')).toBe(balanceBefore);
    expect(await redis.hlen(keys.inFlight(org.org_id))).toBe(0);
    await eventually(async () => ((await redis.zcard(keys.instances())) === 1 ? true : undefined));
    expect(survivor.output()).toContain('recorded requests lost with an instance');
    const metrics = await (await fetch(metricsUrl(survivor))).text();
    expect(metrics).toContain(`gw_lost_requests_recorded_total ${LOST}`);
  }, 60_000);
});

describe('the sweep', () => {
  // Keys of their own: the gateways above sweep their prefix's instances too, and one of them
  // (still running) would otherwise record these drafts itself.
  const keys = createRedisKeys(`${prefix}:sweep`);
  const settled: Array<{ record: UsageRecord; accounts: SettleAccounts }> = [];
  const budget: Pick<BudgetStore, 'settle'> = {
    settle(record, accounts) {
      settled.push({ record, accounts });
      return Promise.resolve('settled');
    },
  };
  const logger = pino({ level: 'silent' });
  const record = (requestId: string, orgId: string, admittedAtMs: number): UsageRecord =>
    lostRecord(orgId, {
      requestId,
      createdAt: new Date(admittedAtMs),
      productUserId: 'pu_1',
      stream: true,
    });
  const accounts = (orgId: string): SettleAccounts => ({
    orgId,
    appConnectionId: 'conn_1',
    orgCap: { capNano: 10n ** 12n, period: { key: '1764547200000' } },
    connectionCap: null,
    user: {
      productUserId: 'pu_1',
      capNano: null,
      creditMode: 'track_only',
      period: { key: '1764000000000' },
    },
  });
  const draftOf = (
    requestId: string,
    orgId: string,
    instance: string,
    lapsesAtMs: number,
    credentialId = '',
  ): string =>
    `${credentialId}\n${encodeDraft({
      instance,
      lapsesAtMs,
      record: record(requestId, orgId, lapsesAtMs - 2000),
      accounts: accounts(orgId),
    })}`;
  /**
   * The sweeper beats every sixth of its 1 s bound from `fromMs` to `untilMs`: it judges
   * others only once its own beats have gone through for the bound (decision 585).
   */
  const beatFrom = async (
    sweeper: LostRequestRecovery,
    fromMs: number,
    untilMs: number,
  ): Promise<void> => {
    for (let atMs = fromMs; atMs < untilMs; atMs += 1000 / 6) await sweeper.beat(atMs);
    await sweeper.beat(untilMs);
  };

  it('leaves a beating instance alone, and waits for the holds of a silent one to lapse', async () => {
    const orgId = `org_sweep_${randomUUID().slice(0, 8)}`;
    await redis.sadd(keys.usageStreamRegistry(), keys.usageStream(orgId));
    const now = Date.now();
    const sweeper = new LostRequestRecovery(redis, scripts, keys, budget, logger, {
      instanceId: 'sweeper',
      deadAfterMs: 1000,
    });
    await redis.zadd(keys.instances(), now, 'beating', now - 5000, 'silent');
    await redis.hset(keys.inFlight(orgId), {
      req_beating: draftOf('req_beating', orgId, 'beating', now - 60_000),
      req_silent: draftOf('req_silent', orgId, 'silent', now + 60_000, 'cred_1'),
      req_unreadable: 'not a draft',
    });
    await beatFrom(sweeper, now - 1200, now);
    expect(await sweeper.sweep(now)).toEqual({ settled: 0, waiting: 1 });
    expect(settled).toEqual([]);
    expect(await redis.zscore(keys.instances(), 'silent')).not.toBeNull();
    // Every org is scanned, so not on every tick: the next scan comes when the draft it left
    // lapses (or another instance dies). A draft that turns up lapsed meanwhile waits for it.
    await redis.hset(keys.inFlight(orgId), {
      req_late: draftOf('req_late', orgId, 'silent', now - 1),
    });
    await beatFrom(sweeper, now, now + 500);
    expect(await sweeper.sweep(now + 500)).toEqual({ settled: 0, waiting: 0 });

    // Its holds lapsed: settled as its draft says, dated at its admission (not now: the
    // periods of the accounts it was held on; decision 402), naming the credential that
    // served it; the silent instance, with nothing left, leaves the set. The beating one beat.
    const later = now + 61_000;
    await beatFrom(sweeper, later - 1200, later);
    await redis.zadd(keys.instances(), later, 'beating');
    // Another instance is sweeping: this one leaves it to it.
    await redis.set(keys.instanceSweep(), 'another', 'PX', 5000);
    expect(await sweeper.sweep(later)).toEqual({ settled: 0, waiting: 0 });
    expect(settled).toEqual([]);
    await redis.del(keys.instanceSweep());
    expect(await sweeper.sweep(later)).toEqual({ settled: 2, waiting: 0 });
    expect(settled.map((call) => call.record.requestId).sort()).toEqual(['req_late', 'req_silent']);
    expect(settled.filter((call) => call.record.requestId === 'req_silent')).toEqual([
      {
        record: {
          ...record('req_silent', orgId, now + 60_000 - 2000),
          latencyMs: 2000 + 61_000 - 60_000,
          route: 'byok',
          credentialId: 'cred_1',
        },
        accounts: accounts(orgId),
      },
    ]);
    expect(await redis.zscore(keys.instances(), 'silent')).toBeNull();
    expect(await redis.zscore(keys.instances(), 'beating')).not.toBeNull();
  });
  it('keeps a silent instance listed while one of its drafts fails to settle, and tries again', async () => {
    const orgId = `org_retry_${randomUUID().slice(0, 8)}`;
    await redis.sadd(keys.usageStreamRegistry(), keys.usageStream(orgId));
    const now = Date.now();
    let failures = 1;
    const attempts: string[] = [];
    const flaky: Pick<BudgetStore, 'settle'> = {
      settle(lost) {
        attempts.push(lost.requestId);
        if (failures-- > 0) return Promise.reject(new Error('Redis refused the settle'));
        return Promise.resolve('settled');
      },
    };
    const sweeper = new LostRequestRecovery(redis, scripts, keys, flaky, logger, {
      instanceId: 'sweeper_2',
      deadAfterMs: 1000,
    });
    await redis.zadd(keys.instances(), now - 5000, 'crashed');
    await redis.hset(keys.inFlight(orgId), {
      req_flaky: draftOf('req_flaky', orgId, 'crashed', now - 1),
    });
    await beatFrom(sweeper, now - 1200, now);
    expect(await sweeper.sweep(now)).toEqual({ settled: 0, waiting: 1 });
    expect(await redis.zscore(keys.instances(), 'crashed')).not.toBeNull();
    await beatFrom(sweeper, now, now + 500);
    expect(await sweeper.sweep(now + 500)).toEqual({ settled: 0, waiting: 0 }); // not yet
    await beatFrom(sweeper, now + 500, now + 1000);
    expect(await sweeper.sweep(now + 1000)).toEqual({ settled: 1, waiting: 0 });
    expect(attempts).toEqual(['req_flaky', 'req_flaky']);
    expect(await redis.zscore(keys.instances(), 'crashed')).toBeNull();
  });
  it('takes no instance for dead before its own beats have gone through for the bound', async () => {
    // After a Redis outage every heartbeat is stale, the sweeper's own too: the silence of
    // the others may only be that they could not beat either (test/lost-requests-outage).
    const orgId = `org_judge_${randomUUID().slice(0, 8)}`;
    await redis.sadd(keys.usageStreamRegistry(), keys.usageStream(orgId));
    const now = Date.now();
    await redis.zadd(keys.instances(), now - 5000, 'vanished');
    await redis.hset(keys.inFlight(orgId), {
      req_vanished: draftOf('req_vanished', orgId, 'vanished', now - 1),
    });
    const before = settled.length;
    const sweeper = new LostRequestRecovery(redis, scripts, keys, budget, logger, {
      instanceId: 'sweeper_3',
      deadAfterMs: 1000,
    });
    // Never beaten; then just started (one beat); then beating again for 0.9 s after a gap
    // of 0.6 s (more than half the bound: Redis was out of its reach).
    expect(await sweeper.sweep(now)).toEqual({ settled: 0, waiting: 0 });
    await sweeper.beat(now);
    expect(await sweeper.sweep(now)).toEqual({ settled: 0, waiting: 0 });
    await beatFrom(sweeper, now - 1600, now - 1500);
    await beatFrom(sweeper, now - 900, now);
    expect(await sweeper.sweep(now)).toEqual({ settled: 0, waiting: 0 });
    // Beating for longer than the bound, but its last beat is past half of it.
    await beatFrom(sweeper, now, now + 300);
    expect(await sweeper.sweep(now + 900)).toEqual({ settled: 0, waiting: 0 });
    expect(settled.length).toBe(before);
    expect(await redis.hexists(keys.inFlight(orgId), 'req_vanished')).toBe(1);
    // Its beats have gone through for the bound: the silent instance is dead, swept as before.
    await beatFrom(sweeper, now + 300, now + 900);
    expect(await sweeper.sweep(now + 900)).toEqual({ settled: 1, waiting: 0 });
    expect(settled.slice(before).map((call) => call.record.requestId)).toEqual(['req_vanished']);
    expect(await redis.zscore(keys.instances(), 'vanished')).toBeNull();
  });
});

describe('a long sweep', () => {
  // Keys of their own, as above.
  const keys = createRedisKeys(`${prefix}:long`);
  const logger = pino({ level: 'silent' });
  const draftOf = (requestId: string, orgId: string, instance: string, lapsesAtMs: number) =>
    `\n${encodeDraft({
      instance,
      lapsesAtMs,
      record: lostRecord(orgId, { requestId, createdAt: new Date(lapsesAtMs - 2000) }),
      accounts: {
        orgId,
        appConnectionId: 'conn_1',
        orgCap: null,
        connectionCap: null,
        user: null,
      },
    })}`;

  it("holds back neither the instance's own heartbeat nor lets another instance take it for dead", async () => {
    // A scan that runs long (many orgs' in-flight hashes, a slow Redis): here the settle of the
    // first lost request it finds waits until the test lets it go. Meanwhile the scanning
    // instance must go on beating: past INSTANCE_DEAD_AFTER_MS of silence the others would take
    // it for dead and record its own lapsed requests `gateway_lost`, nothing charged.
    const orgId = `org_long_${randomUUID().slice(0, 8)}`;
    await redis.sadd(keys.usageStreamRegistry(), keys.usageStream(orgId));
    const now = Date.now();
    await redis.zadd(keys.instances(), now - 5000, 'vanished');
    await redis.hset(keys.inFlight(orgId), {
      req_vanished: draftOf('req_vanished', orgId, 'vanished', now - 1),
      // Its holds lapsed (their renewals failed while Redis was out of reach, decision 581),
      // and its instance is alive: its own settle will charge it.
      req_scanner: draftOf('req_scanner', orgId, 'scanner', now - 1),
    });
    let release: (() => void) | undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const slowSettles: string[] = [];
    const slow: Pick<BudgetStore, 'settle'> = {
      async settle(lost) {
        slowSettles.push(lost.requestId);
        await released;
        return 'settled';
      },
    };
    const scanner = new LostRequestRecovery(redis, scripts, keys, slow, logger, {
      instanceId: 'scanner',
      deadAfterMs: 600,
    });
    await scanner.start();
    try {
      // Once its beats have gone through for the bound it sweeps, and its scan stops there.
      await eventually(async () => (slowSettles.length > 0 ? true : undefined), 10_000);
      expect(slowSettles).toEqual(['req_vanished']);
      const scanningSinceMs = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 1200)); // twice the bound
      // Its heartbeat kept moving while the scan waited.
      expect(Number(await redis.zscore(keys.instances(), 'scanner'))).toBeGreaterThan(
        scanningSinceMs + 600,
      );
      // Another instance sweeps (the scan's lock lives max(bound, 10 s): a scan may outlast
      // it; deleted here rather than waited for). It takes the vanished instance for dead, not
      // the scanning one.
      await redis.del(keys.instanceSweep());
      const otherSettles: string[] = [];
      const other = new LostRequestRecovery(
        redis,
        scripts,
        keys,
        {
          settle(lost) {
            otherSettles.push(lost.requestId);
            return Promise.resolve('settled');
          },
        },
        logger,
        { instanceId: 'other', deadAfterMs: 600 },
      );
      const at = Date.now();
      for (let beatAtMs = at - 700; beatAtMs < at; beatAtMs += 100) await other.beat(beatAtMs);
      await other.beat(at);
      expect(await other.sweep(at)).toEqual({ settled: 1, waiting: 0 });
      expect(otherSettles).toEqual(['req_vanished']);
      expect(await redis.zscore(keys.instances(), 'scanner')).not.toBeNull();
    } finally {
      release!();
      await scanner.stop(true);
    }
    // Stopped, it beats no more and has left the set.
    expect(await redis.zscore(keys.instances(), 'scanner')).toBeNull();
    expect(slowSettles).toEqual(['req_vanished']);
  }, 30_000);

  it("does not delete another instance's lock when its own lapsed during its scan", async () => {
    // The sweep's lock lives max(bound, 10 s); a scan may outlast it (here its one settle waits
    // for the test, and the lock's lapse is its deletion). Another instance then takes the
    // lock and scans; the first one's finish must leave that lock alone, or a third instance
    // would scan beside the second, and so on. Keys of its own: the fake settles leave drafts.
    const keys = createRedisKeys(`${prefix}:lock`);
    const orgId = `org_lock_${randomUUID().slice(0, 8)}`;
    await redis.sadd(keys.usageStreamRegistry(), keys.usageStream(orgId));
    const now = Date.now();
    await redis.zadd(keys.instances(), now - 5000, 'vanished');
    await redis.hset(keys.inFlight(orgId), {
      req_vanished: draftOf('req_vanished', orgId, 'vanished', now - 1),
    });
    /** A budget whose settles wait until `go` is called; `taken` lists what they settle. */
    const gated = () => {
      let go: (() => void) | undefined;
      const gate = new Promise<void>((resolve) => (go = resolve));
      const taken: string[] = [];
      const budget: Pick<BudgetStore, 'settle'> = {
        async settle(lost) {
          taken.push(lost.requestId);
          await gate;
          return 'settled';
        },
      };
      return { budget, taken, go: () => go!() };
    };
    const beatUntil = async (sweeper: LostRequestRecovery, at: number): Promise<void> => {
      for (let beatAtMs = at - 700; beatAtMs < at; beatAtMs += 100) await sweeper.beat(beatAtMs);
      await sweeper.beat(at);
    };
    const lock = keys.instanceSweep();

    const firstBudget = gated();
    const first = new LostRequestRecovery(redis, scripts, keys, firstBudget.budget, logger, {
      instanceId: 'first',
      deadAfterMs: 600,
    });
    await beatUntil(first, now);
    const firstSweep = first.sweep(now);
    await eventually(async () => (firstBudget.taken.length > 0 ? true : undefined), 10_000);
    const firstToken = await redis.get(lock);
    expect(firstToken).not.toBeNull();

    // Its lock lapses; another instance takes it and scans (slowly too).
    await redis.del(lock);
    const secondBudget = gated();
    const second = new LostRequestRecovery(redis, scripts, keys, secondBudget.budget, logger, {
      instanceId: 'second',
      deadAfterMs: 600,
    });
    const at = Date.now();
    await beatUntil(second, at);
    const secondSweep = second.sweep(at);
    await eventually(async () => (secondBudget.taken.length > 0 ? true : undefined), 10_000);
    const secondToken = await redis.get(lock);
    expect(secondToken).not.toBeNull();
    expect(secondToken).not.toBe(firstToken);

    // The first one finishes: the second's lock is still there, and the first, no longer
    // holding the lock, concludes nothing from its scan (the vanished instance stays listed).
    firstBudget.go();
    expect(await firstSweep).toEqual({ settled: 1, waiting: 0 });
    expect(await redis.get(lock)).toBe(secondToken);
    expect(await redis.zscore(keys.instances(), 'vanished')).not.toBeNull();

    // The second one finishes: it concludes, and releases its own lock.
    secondBudget.go();
    expect(await secondSweep).toEqual({ settled: 1, waiting: 0 });
    expect(await redis.get(lock)).toBeNull();
    expect(await redis.zscore(keys.instances(), 'vanished')).toBeNull();
  }, 30_000);

  it('renews its lock while its scan runs', async () => {
    // The lock lives 10 s here; the scan renews it once a third of that has passed. Its first
    // settle waits 3.5 s, then the second settle finds the lock renewed to its full lifetime
    // (without the renewal, 6.5 s at most would be left).
    const keys = createRedisKeys(`${prefix}:renew`);
    const orgId = `org_renew_${randomUUID().slice(0, 8)}`;
    await redis.sadd(keys.usageStreamRegistry(), keys.usageStream(orgId));
    const now = Date.now();
    await redis.zadd(keys.instances(), now - 5000, 'vanished');
    await redis.hset(keys.inFlight(orgId), {
      req_one: draftOf('req_one', orgId, 'vanished', now - 1),
      req_two: draftOf('req_two', orgId, 'vanished', now - 1),
    });
    const lock = keys.instanceSweep();
    let token: string | null = null;
    let lifeLeftMs = 0;
    const scanner = new LostRequestRecovery(
      redis,
      scripts,
      keys,
      {
        async settle() {
          if (token === null) {
            token = await redis.get(lock);
            await new Promise((resolve) => setTimeout(resolve, 3500));
          } else {
            expect(await redis.get(lock)).toBe(token);
            lifeLeftMs = await redis.pttl(lock);
          }
          return 'settled';
        },
      },
      logger,
      { instanceId: 'renewer', deadAfterMs: 600 },
    );
    for (let beatAtMs = now - 700; beatAtMs < now; beatAtMs += 100) await scanner.beat(beatAtMs);
    await scanner.beat(now);
    expect(await scanner.sweep(now)).toEqual({ settled: 2, waiting: 0 });
    expect(token).not.toBeNull();
    expect(lifeLeftMs).toBeGreaterThan(9000);
    expect(await redis.get(lock)).toBeNull(); // released at its end
  }, 30_000);
});

describe('a draft follows its request', () => {
  it('names the credential serving it through every failover, and leaves with the settle', async () => {
    const { budget: store } = createMoneyLayer({
      db,
      redis,
      keys,
      scripts: defineScripts(redis),
      reservationTtlMs: 60_000,
      instanceId: 'follower',
    });
    const orgId = `org_follow_${randomUUID().slice(0, 8)}`;
    const wallet = keys.wallet(orgId);
    await defineScripts(redis).accountLoad(
      { account: wallet, expiries: keys.holdExpiries(wallet) },
      { field: 'balance', amount_nano: '1000000', expire_at_ms: '' },
    );
    const accounts: RequestAccounts = {
      orgId,
      appConnectionId: 'conn_1',
      orgCap: null,
      connectionCap: null,
      user: null,
      walletPays: true,
      credentials: { tiers: [['cred_a'], ['cred_b']], byokOnly: false },
    };
    const requestId = randomUUID();
    const record = lostRecord(orgId, { requestId, reservedNano: 700n });
    const serving = async (): Promise<string | undefined> =>
      (await redis.hget(keys.inFlight(orgId), requestId))?.split('\n')[0];
    const failover = (failed: string) =>
      store.failover({
        requestId,
        accounts,
        failedCredentialId: failed,
        cooldownUntilMs: Date.now() + 60_000,
        amountNano: 700n,
        failure: 'failed_over',
        upstreamStatus: 429,
      });

    expect(
      await store.reserve({ requestId, accounts, amountNano: 700n, lostRecord: record }),
    ).toEqual({ kind: 'held', credentialId: 'cred_a' });
    expect(await serving()).toBe('cred_a');
    expect(await failover('cred_a')).toEqual({ kind: 'credential', credentialId: 'cred_b' });
    expect(await serving()).toBe('cred_b');
    expect(await failover('cred_b')).toEqual({ kind: 'system' });
    expect(await serving()).toBe('');
    expect(await redis.hget(wallet, 'reserved')).toBe('700');
    // What reserve kept is the record the draft decodes to.
    const kept = (await redis.hget(keys.inFlight(orgId), requestId))!;
    expect(decodeDraft(kept.slice(kept.indexOf('\n') + 1))).toMatchObject({
      instance: 'follower',
      record: { requestId, reservedNano: 700n, endReason: 'gateway_lost' },
      accounts: { orgId, appConnectionId: 'conn_1', user: null },
    });

    expect(await store.settle(record, accounts)).toBe('settled');
    expect(await redis.hexists(keys.inFlight(orgId), requestId)).toBe(0);
    expect(await redis.hget(wallet, 'reserved')).toBe('0');
  });
});
