// What a Redis Cluster asks of the code beyond a single Redis, on the local three-master
// cluster: calls that cross slots are refused (so running the suites here is a real check),
// scripts are on every master, scans and deletes see every master, the usage writer drains
// orgs spread over every slot, pipelines stay per node, transactions per key, and the
// invalidation subscriber hears every node's messages and says when it (re)connects.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoginThrottle } from '../../src/accounts/login-throttle.js';
import { apiKeySharedCache } from '../../src/auth/api-key-store.js';
import { createMoneyLayer } from '../../src/billing/compose.js';
import { createDbPool } from '../../src/db/pool.js';
import { pendingUsageRecords } from '../../src/ledger/usage-backlog.js';
import {
  isCluster,
  keySlot,
  masters,
  pingAll,
  scanKeys,
  unlinkMatching,
  whenReady,
  type RedisClient,
} from '../../src/redis/connect.js';
import { createRedisKeys } from '../../src/redis/keys.js';
import {
  defineScripts,
  loadLuaSource,
  preloadScripts,
  scriptSpecs,
} from '../../src/redis/scripts.js';
import { connectSubscriber } from '../../src/redis/subscriber.js';
import { TEST_DATABASE_URL, testRedisTarget, uniquePrefix } from '../support/env.js';
import { usageRecord } from '../support/records.js';
import { deletePrefix, eventually, testRedis } from '../support/services.js';
import { testUsageWriter } from '../support/usage-writer.js';

const prefix = uniquePrefix('cluster');
const keys = createRedisKeys(prefix);
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const scripts = defineScripts(redis);
const { budget } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });

beforeAll(() => whenReady(redis)); // the cluster's slots are known from then on

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

/** The master port that serves a key. */
function portOf(client: RedisClient, key: string): string {
  if (!isCluster(client)) throw new Error('these tests need TEST_REDIS_CLUSTER_NODES');
  return client.slots[keySlot(key)]![0]!.split(':').at(-1)!;
}

/** `count` org ids whose keys are spread over every master (at least one on each). */
function orgsOnEveryMaster(count: number): string[] {
  const orgs = Array.from({ length: count }, (_, index) => `org_cl_${Date.now()}_${index}`);
  const ports = new Set(orgs.map((orgId) => portOf(redis, keys.wallet(orgId))));
  expect(ports.size).toBe(3);
  return orgs;
}

const settleUsage = (orgId: string, sellCostNano: bigint) =>
  budget.settle(usageRecord(orgId, sellCostNano), {
    orgId,
    appConnectionId: 'conn_test',
    orgCap: null,
    connectionCap: null,
    user: null,
  });

describe('the local Redis Cluster', () => {
  it('has three masters that all answer', async () => {
    expect(isCluster(redis)).toBe(true);
    expect(masters(redis)).toHaveLength(3);
    expect(await pingAll(redis)).toBe(true);
  });

  it('refuses a script whose keys are in two slots, so the suites run here catch one', async () => {
    const [first, second] = orgsOnEveryMaster(30).filter(
      (orgId, index, all) =>
        index === 0 || portOf(redis, keys.wallet(orgId)) !== portOf(redis, keys.wallet(all[0]!)),
    );
    // The settle script with the usage stream of another org.
    const record = usageRecord(first!, 1n);
    await expect(
      scripts.settle(
        {
          wallet: keys.wallet(first!),
          wallet_expiries: keys.holdExpiries(keys.wallet(first!)),
          org_cap: keys.orgCap(first!, 'unused'),
          org_cap_expiries: keys.holdExpiries(keys.orgCap(first!, 'unused')),
          conn_cap: keys.orgCap(first!, 'unused'),
          conn_cap_expiries: keys.holdExpiries(keys.orgCap(first!, 'unused')),
          user_spend: keys.orgCap(first!, 'unused'),
          user_spend_expiries: keys.holdExpiries(keys.orgCap(first!, 'unused')),
          user_credits: keys.orgCap(first!, 'unused'),
          user_grants: keys.orgCap(first!, 'unused'),
          settled_marker: keys.settled(first!, record.requestId),
          usage_stream: keys.usageStream(second!),
          in_flight: keys.inFlight(first!),
          rebuilds: keys.rebuilds(first!),
          draining_for: keys.orgCap(first!, 'unused'),
        },
        {
          request_id: record.requestId,
          cost_nano: '1',
          wallet_cost_nano: '0',
          held_nano: '0',
          marker_ttl_s: 60,
          now_ms: Date.now(),
          user_cap_nano: '',
          user_mode: 'none',
          uses_org_cap: '0',
          uses_conn_cap: '0',
          org_cap_nano: '',
          conn_cap_nano: '',
          user_period: '',
          cap_period: '',
          admitted_ms: Date.now(),
        },
      ),
    ).rejects.toThrow(/CROSSSLOT/);
    expect(await redis.xlen(keys.usageStream(second!))).toBe(0);
  });

  it('loads every script on every master', async () => {
    await preloadScripts(redis);
    const shas = Object.values(scriptSpecs).map((spec) =>
      createHash('sha1').update(loadLuaSource(spec.file)).digest('hex'),
    );
    for (const node of masters(redis)) {
      expect(await node.script('EXISTS', ...shas)).toEqual(shas.map(() => 1));
    }
  });

  it('scans and deletes keys on every master', async () => {
    const scanPrefix = `${prefix}-scan`;
    const scanKeysOf = createRedisKeys(scanPrefix);
    const orgs = orgsOnEveryMaster(30);
    for (const orgId of orgs) await redis.set(scanKeysOf.wallet(orgId), '1');
    const found: string[] = [];
    await scanKeys(redis, `${scanPrefix}:*`, async (page) => void found.push(...page));
    expect(found.sort()).toEqual(orgs.map((orgId) => scanKeysOf.wallet(orgId)).sort());
    expect(await unlinkMatching(redis, `${scanPrefix}:*`)).toBe(orgs.length);
    const left: string[] = [];
    await scanKeys(redis, `${scanPrefix}:*`, async (page) => void left.push(...page));
    expect(left).toEqual([]);
  });

  it('drains usage of orgs over hundreds of slots into Postgres, every record once', async () => {
    // More slots than one read window (src/ledger/usage-stream-group.ts), several rows each.
    const orgs = orgsOnEveryMaster(300);
    for (const orgId of orgs) {
      await settleUsage(orgId, 1_000n);
      await settleUsage(orgId, 2_000n);
    }
    expect(await pendingUsageRecords(redis, keys)).toBe(600);
    const writerRedis = testRedis();
    const writer = testUsageWriter(writerRedis, keys, db, 'cluster-test');
    writer.start();
    try {
      const rows = await eventually(async () => {
        const { rows: found } = await db.query<{ org_id: string; total: string; n: number }>(
          `SELECT org_id, sum(sell_cost)::text AS total, count(*)::int AS n FROM usage_records
            WHERE org_id = ANY($1) GROUP BY org_id`,
          [orgs],
        );
        return found.length === orgs.length && found.every((row) => row.n === 2)
          ? found
          : undefined;
      }, 20_000);
      expect(new Set(rows.map((row) => row.total))).toEqual(new Set(['0.000003000000']));
      await eventually(async () =>
        (await pendingUsageRecords(redis, keys)) === 0 ? true : undefined,
      );
    } finally {
      await writer.stop();
      await writerRedis.quit();
    }
  });

  it('counts sign-in failures per account and per address, in different slots', async () => {
    const throttle = new LoginThrottle(redis, keys, {
      perAccount: 3,
      perAddress: 100,
      signupsPerAddress: 10,
      windowMs: 60_000,
    });
    const email = `someone-${randomBytes(3).toString('hex')}@example.com`;
    const address = `192.0.2.${Math.floor(Math.random() * 250)}`;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect(await throttle.attempt(email, address)).toBe(0);
    }
    const blocked = await throttle.attempt(email, address);
    expect(blocked).toBeGreaterThan(50_000);
    expect(blocked).toBeLessThanOrEqual(60_000);
    await throttle.recordSuccess(email, address);
    expect(await throttle.attempt(email, address)).toBe(0);
  });

  it('invalidates API-key cache entries of many slots at once', async () => {
    const cache = apiKeySharedCache(redis, keys);
    const hashes = Array.from({ length: 20 }, () => randomBytes(32).toString('hex'));
    expect(new Set(hashes.map((hash) => portOf(redis, keys.apiKey(hash)))).size).toBe(3);
    for (const hash of hashes) {
      expect(await cache.fill(hash, '0', '{"id":"key"}', 60)).toBe(true);
    }
    await cache.invalidate(hashes);
    for (const hash of hashes) {
      expect(await cache.read(hash)).toEqual({ found: false, generation: '1' });
      // A fill that read before the invalidation cannot store.
      expect(await cache.fill(hash, '0', '{"id":"key"}', 60)).toBe(false);
    }
  });

  it('hears invalidations published on any node, past a seed node that is down, and says when it reconnects', async () => {
    const target = testRedisTarget();
    if (target.kind !== 'cluster') throw new Error('these tests need TEST_REDIS_CLUSTER_NODES');
    const name = `gw-test-sub-${randomBytes(4).toString('hex')}`;
    // The first node it is given answers nothing: it moves on to the next.
    const subscriber = connectSubscriber(
      target,
      () => [{ host: '127.0.0.1', port: 1 }, ...target.nodes],
      name,
    );
    const channel = keys.invalidationChannel();
    const heard: string[] = [];
    let readies = 0;
    subscriber.on('message', (on, message) => {
      if (on === channel) heard.push(message);
    });
    subscriber.on('ready', () => (readies += 1));
    try {
      await subscriber.subscribe(channel);
      const first = subscriber.connectedTo()!;
      expect(first.port).not.toBe(1);
      // Published through each master in turn: the cluster carries each to every node.
      for (const [index, node] of masters(redis).entries()) {
        await node.publish(channel, `m${index}`);
      }
      await eventually(async () => (heard.length === 3 ? true : undefined));
      expect(heard.sort()).toEqual(['m0', 'm1', 'm2']);

      // Its connection is cut: it connects again and says so (its listener drops its caches).
      const readyBefore = readies;
      const node = masters(redis).find((master) => master.options.port === first.port)!;
      const clients = String(await node.call('CLIENT', 'LIST'));
      const id = /id=(\d+) [^\n]* name=(\S+)/g;
      const ids = [...clients.matchAll(id)].filter((match) => match[2] === name);
      expect(ids).toHaveLength(1);
      await node.call('CLIENT', 'KILL', 'ID', ids[0]![1]!);
      await eventually(async () => (readies > readyBefore ? true : undefined));
      await redis.publish(channel, 'after');
      await eventually(async () => (heard.includes('after') ? true : undefined));
    } finally {
      await subscriber.quit();
    }
  });
});
