// One master of a Redis Cluster killed and restarted empty (no persistence) under a running
// gateway: the orgs whose slots it serves get a clean 503 while it is away, the orgs on the
// other shards go on being served, and once it is back every account of its orgs is rebuilt
// from Postgres, exactly — the rebuild works per shard. The master killed is the one that also
// holds the usage stream registry, so it comes back without the registry: the writers keep
// reading the streams they knew and put them back (before, the victim's records waited for the
// gateway's next announcement, a minute later). A private cluster: the shared one is never
// killed. (It does not require full coverage, so the other shards keep answering.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, keySlot, whenReady } from '../../src/redis/connect.js';
import { redisTarget } from '../../src/redis/target.js';
import { createRedisKeys } from '../../src/redis/keys.js';
import { baseEnv, uniquePrefix } from '../support/env.js';
import { bearer, postJson } from '../support/http.js';
import { startPrivateCluster, type PrivateCluster } from '../support/private-cluster.js';
import {
  runCliJson,
  seed,
  startGatewayProcess,
  type SeededOrg,
  type SpawnedGateway,
} from '../support/processes.js';
import { eventually, testDb } from '../support/services.js';

const prefix = uniquePrefix('shard-restart');
const keys = createRedisKeys(prefix);
const db = testDb();
let cluster: PrivateCluster;
let env: Record<string, string>;
let gateway: SpawnedGateway;

const chat = {
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'hi' }],
};

beforeAll(async () => {
  cluster = await startPrivateCluster({ fullCoverage: false });
  env = { ...baseEnv(prefix), REDIS_CLUSTER_NODES: cluster.nodes };
  gateway = await startGatewayProcess(env);
});

afterAll(async () => {
  await gateway?.stop('SIGKILL');
  await cluster?.stop();
  await db.end();
});

/** The port of the master that serves a key. */
async function masterPortOfKey(key: string): Promise<number> {
  const client = connectRedis(redisTarget({ REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.nodes }), {
    maxRetriesPerRequest: 2,
  });
  try {
    await whenReady(client);
    const [node] = (client as import('ioredis').Cluster).slots[keySlot(key)]!;
    return Number(node!.split(':').at(-1));
  } finally {
    client.disconnect();
  }
}

/** The port of the master that serves an org's keys. */
const masterPortOf = (orgId: string): Promise<number> => masterPortOfKey(keys.wallet(orgId));

const send = (org: SeededOrg) =>
  postJson<{ error?: { code: string } }>(
    `${gateway.url}/v1/chat/completions`,
    chat,
    bearer(org.api_key),
  );

const wallet = (org: SeededOrg) =>
  runCliJson<{ balance: string; reserved: string }>(
    ['wallet', 'show', '--org-id', org.org_id],
    env,
  );

async function settledRow(requestId: string): Promise<unknown> {
  return eventually(async () => {
    const { rows } = await db.query('SELECT status FROM usage_records WHERE request_id = $1', [
      requestId,
    ]);
    return rows[0];
  }, 30_000);
}

const nano = (text: string): bigint => BigInt(text.replace('.', ''));

describe('a cluster master restarted empty', () => {
  it('fails its orgs closed, serves the other shards, and rebuilds its accounts from Postgres', async () => {
    // Two orgs on different masters, the victim's also holding the stream registry.
    const victimPort = await masterPortOfKey(keys.usageStreamRegistry());
    let victim = await seed(env);
    while ((await masterPortOf(victim.org_id)) !== victimPort) victim = await seed(env);
    let bystander = await seed(env);
    while ((await masterPortOf(bystander.org_id)) === victimPort) bystander = await seed(env);

    const firstVictim = await send(victim);
    const firstBystander = await send(bystander);
    expect([firstVictim.status, firstBystander.status]).toEqual([200, 200]);
    // Nothing is kept on disk: let both records reach Postgres before the kill (a production
    // cluster runs with AOF on every master, which keeps records not yet written).
    await settledRow(firstVictim.headers.get('x-request-id')!);
    await settledRow(firstBystander.headers.get('x-request-id')!);
    const victimBefore = await wallet(victim);
    const bystanderBefore = await wallet(bystander);
    const costOfOne = nano('100.000000000000') - nano(victimBefore.balance);
    expect(costOfOne).toBeGreaterThan(0n);

    await cluster.kill(victimPort);
    const down = await send(victim);
    expect(down.status).toBe(503);
    expect(down.body.error?.code).toBe('gw_unavailable');
    // The other shard is not held up by the one that is away.
    const during = await send(bystander);
    expect(during.status).toBe(200);
    await settledRow(during.headers.get('x-request-id')!);

    await cluster.restart(victimPort); // empty: the victim's accounts must come from Postgres
    const back = await eventually(async () => {
      const response = await send(victim);
      return response.status === 200 ? response : undefined;
    }, 20_000);
    await settledRow(back.headers.get('x-request-id')!);
    const victimAfter = await eventually(async () => {
      const shown = await wallet(victim);
      return shown.reserved === '0.000000000000' ? shown : undefined;
    });
    // The ledger had the first request; the rebuilt wallet continues from it, and the request
    // refused while the shard was away cost nothing.
    expect(nano(victimAfter.balance)).toBe(nano(victimBefore.balance) - costOfOne);
    const bystanderAfter = await eventually(async () => {
      const shown = await wallet(bystander);
      return shown.reserved === '0.000000000000' ? shown : undefined;
    });
    expect(nano(bystanderAfter.balance)).toBe(nano(bystanderBefore.balance) - costOfOne);
  }, 120_000); // a master's restart and the writer's catch-up take tens of seconds under load
});
