// A Redis outage longer than INSTANCE_DEAD_AFTER_MS leaves every instance's heartbeat stale:
// none could write it. The first instance back must not take the others for dead on that
// (they are coming back on their own back-off): a request running or spooled on one of them
// through the outage is charged by its own settle, not recorded `gateway_lost` by the sweep
// (decision 585). An instance that really died meanwhile is still swept, once the sweeper has
// itself beaten for INSTANCE_DEAD_AFTER_MS again; and an instance cut off alone is taken for
// dead by the others after the bound, as before. A private redis-server behind one relay per
// instance, each cut and opened again by the test (the data stays); dead after 1.5 s, holds
// lapse after 600 ms here.
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisBudgetStore } from '../src/billing/redis-budget-store.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { LostRequestRecovery } from '../src/billing/lost-requests.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { isolatedContext } from './support/context.js';
import { privateRedis, type PrivateRedis } from './support/private-redis.js';
import { CuttableRelay } from './support/cuttable-relay.js';
import { ledgerRow, lostRecord, usageRecord, walletAccounts } from './support/records.js';
import { eventually, freePort } from './support/services.js';
import { testSettleSpool } from './support/settle-spool.js';
import { testUsageWriter } from './support/usage-writer.js';

const { prefix, db } = isolatedContext('lost-outage');
const DEAD_AFTER_MS = 1500;
const HOLD_TTL_MS = 600;
const keys = createRedisKeys(prefix);
const silent = pino({ level: 'silent' });
let server: PrivateRedis;
let direct: Redis;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A gateway instance's money parts over its own relay: budget store and lost-request sweep. */
interface Instance {
  readonly relay: CuttableRelay;
  readonly client: Redis;
  readonly budget: RedisBudgetStore;
  readonly recovery: LostRequestRecovery;
}
const instances: Instance[] = [];

async function startInstance(name: string): Promise<Instance> {
  const relay = new CuttableRelay(await freePort(), () => server.port);
  await relay.open();
  // The gateway's client settings (src/composition/redis.ts), with a short bound and a quick,
  // steady reconnect, so the test says which instance is back first.
  const client = new Redis({
    port: relay.port,
    host: '127.0.0.1',
    maxRetriesPerRequest: 2,
    commandTimeout: 300,
    retryStrategy: () => 50,
  });
  client.on('error', () => undefined);
  await new Promise((resolve) => client.once('ready', resolve));
  const { budget } = createMoneyLayer({
    db,
    redis: client,
    keys,
    scripts: defineScripts(client),
    reservationTtlMs: HOLD_TTL_MS,
    instanceId: name,
  });
  const recovery = new LostRequestRecovery(client, defineScripts(client), keys, budget, silent, {
    instanceId: name,
    deadAfterMs: DEAD_AFTER_MS,
  });
  await recovery.start();
  const instance = { relay, client, budget, recovery };
  instances.push(instance);
  return instance;
}

beforeAll(async () => {
  server = await privateRedis('lost-outage');
  await server.start();
  direct = new Redis({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: null });
  direct.on('error', () => undefined);
});

afterAll(async () => {
  for (const instance of instances) {
    await instance.recovery.stop(false);
    await instance.relay.cut();
    instance.client.disconnect();
  }
  direct?.disconnect();
  server?.close();
});

/** A request of 800 held on a wallet of 1,000 of its own org, its draft beside the holds. */
async function held(
  instance: Instance,
  label: string,
): Promise<{ record: UsageRecord; accounts: RequestAccounts }> {
  const orgId = `org_lost_outage_${label}_${Date.now()}`;
  await direct.hset(keys.wallet(orgId), 'balance', '1000', 'reserved', '0');
  const record = usageRecord(orgId, 800n, {
    walletCostNano: 800n,
    reservedNano: 800n,
    endReason: 'completed',
  });
  const accounts = walletAccounts(record);
  const outcome = await instance.budget.reserve({
    requestId: record.requestId,
    accounts,
    amountNano: 800n,
    lostRecord: lostRecord(orgId, { requestId: record.requestId, reservedNano: 800n }),
  });
  expect(outcome).toMatchObject({ kind: 'held' });
  return { record, accounts };
}

describe('Redis out of reach for longer than INSTANCE_DEAD_AFTER_MS', () => {
  it('for every instance leaves the requests of those that come back to their own settles: charged, not lost', async () => {
    const first = await startInstance('gw_first_back');
    const later = await startInstance('gw_back_later');
    const dying = await startInstance('gw_dies_meanwhile');
    // On the instance that comes back later: a request still running through the outage, and
    // one whose settle met Redis out of reach and waits in its spool. On the one that dies
    // during the outage: a request it never settles.
    const running = await held(later, 'running');
    const stopRenewing = later.budget.keepHeld({
      requestId: running.record.requestId,
      accounts: running.accounts,
      amountNano: 800n,
    });
    const spooled = await held(later, 'spooled');
    const { spool } = testSettleSpool(
      { db, redis: later.client, keys, budget: later.budget },
      prefix,
    );
    await spool.open();
    await spool.append(spooled.record, spooled.accounts);
    const lost = await held(dying, 'lost');

    // Redis out of reach for every instance for twice the bound (and so past every lapse).
    await Promise.all(instances.map((instance) => instance.relay.cut()));
    await sleep(DEAD_AFTER_MS * 2);
    await dying.recovery.stop(false); // it never comes back
    // Every heartbeat is stale now, and every draft lapsed: nobody could write.
    const beats = await direct.zrange(keys.instances(), 0, -1, 'WITHSCORES');
    const beatAtMs = beats.filter((_, index) => index % 2 === 1).map(Number);
    expect(beatAtMs).toHaveLength(3);
    expect(Math.max(...beatAtMs)).toBeLessThan(Date.now() - DEAD_AFTER_MS);

    // Redis is reachable again. Each instance reconnects on its own back-off: one first, the
    // other a third of the bound later (its ticks had the sweep's time to run meanwhile).
    const firstReady = new Promise((resolve) => first.client.once('ready', resolve));
    await first.relay.open();
    await firstReady;
    await sleep(DEAD_AFTER_MS / 3);
    const laterReady = new Promise((resolve) => later.client.once('ready', resolve));
    await later.relay.open();
    await laterReady;
    // The running request ends and settles; the spool replays (as on `ready` in the gateway).
    stopRenewing();
    const runningSettle = await later.budget.settle(running.record, running.accounts);
    await spool.replay();
    await spool.stop();
    // The dying instance's request is still recorded lost: once the first instance back has
    // beaten for the bound again.
    await eventually(
      async () => ((await direct.hlen(keys.inFlight(lost.record.orgId))) === 0 ? true : undefined),
      DEAD_AFTER_MS * 6,
    ).catch(() => undefined); // the assertion below says what

    const writer = testUsageWriter(direct, keys, db, 'lost-outage-writer');
    writer.start();
    const row = (requestId: string) =>
      ledgerRow(db, requestId, 'status, end_reason, wallet_cost::text').catch(() => null);
    const rows = {
      running: await row(running.record.requestId),
      spooled: await row(spooled.record.requestId),
      lost: await row(lost.record.requestId),
    };
    await writer.stop();
    const wallet = async (orgId: string) => direct.hmget(keys.wallet(orgId), 'balance', 'reserved');
    expect({
      runningSettle,
      wallets: {
        running: await wallet(running.record.orgId),
        spooled: await wallet(spooled.record.orgId),
        lost: await wallet(lost.record.orgId),
      },
      rows,
    }).toEqual({
      runningSettle: 'settled',
      // 1,000 nano less the 800 each request cost; the lost one's hold released, nothing charged.
      wallets: { running: ['200', '0'], spooled: ['200', '0'], lost: ['1000', '0'] },
      rows: {
        running: { status: 'completed', end_reason: 'completed', wallet_cost: '0.000000800000' },
        spooled: { status: 'completed', end_reason: 'completed', wallet_cost: '0.000000800000' },
        lost: { status: 'incomplete', end_reason: 'gateway_lost', wallet_cost: '0.000000000000' },
      },
    });
  }, 30_000);

  it('of one instance alone leaves its lapsed request to the others, which kept beating: recorded lost, as before', async () => {
    // A partition of one instance: the bound is right for it as before (decision 270), and
    // its settle on return finds the request recorded, as before.
    await startInstance('gw_stays');
    const cutOff = await startInstance('gw_cut_off');
    const running = await held(cutOff, 'partitioned');
    const stopRenewing = cutOff.budget.keepHeld({
      requestId: running.record.requestId,
      accounts: running.accounts,
      amountNano: 800n,
    });
    await cutOff.relay.cut();
    await eventually(
      async () =>
        (await direct.hlen(keys.inFlight(running.record.orgId))) === 0 ? true : undefined,
      DEAD_AFTER_MS * 6,
    );
    const ready = new Promise((resolve) => cutOff.client.once('ready', resolve));
    await cutOff.relay.open();
    await ready;
    stopRenewing();
    expect(await cutOff.budget.settle(running.record, running.accounts)).toBe('already_settled');
    expect(await direct.hmget(keys.wallet(running.record.orgId), 'balance', 'reserved')).toEqual([
      '1000',
      '0',
    ]);
    const writer = testUsageWriter(direct, keys, db, 'lost-outage-writer');
    writer.start();
    const row = await ledgerRow(db, running.record.requestId, 'end_reason, wallet_cost::text');
    await writer.stop();
    expect(row).toEqual({ end_reason: 'gateway_lost', wallet_cost: '0.000000000000' });
  }, 30_000);
});
