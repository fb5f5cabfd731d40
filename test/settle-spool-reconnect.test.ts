// A spooled settle whose holds' lapse passed while Redis was out of reach (its renewals failed):
// the holds are still listed (nothing could sweep them meanwhile), and the renewal sent the
// moment the connection is ready again, before anything this instance sends after it, keeps
// them; so a request this instance admits right at the reconnect does not sweep them and is
// refused (decision 581). A private redis-server behind a relay the test cuts (the data stays);
// holds lapse after 600 ms here.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReserveOutcome } from '../src/billing/budget-store.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { newRequestId } from '../src/ids.js';
import type { RedisClient } from '../src/redis/connect.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { isolatedContext } from './support/context.js';
import { privateRedis, type PrivateRedis } from './support/private-redis.js';
import { CuttableRelay } from './support/cuttable-relay.js';
import { usageRecord, walletAccounts } from './support/records.js';
import { freePort } from './support/services.js';
import { testSettleSpool } from './support/settle-spool.js';

const { prefix, db } = isolatedContext('spool-reconnect');
const HOLD_TTL_MS = 600;
const keys = createRedisKeys(prefix);
let server: PrivateRedis;
let relay: CuttableRelay;
let direct: Redis;
let client: RedisClient;

beforeAll(async () => {
  server = await privateRedis('spool-reconnect');
  await server.start();
  relay = new CuttableRelay(await freePort(), () => server.port);
  direct = new Redis({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: null });
  direct.on('error', () => undefined);
  await relay.open();
  // The gateway's client (src/composition/redis.ts) through the relay, but with no offline
  // queue. The gateway's drops what it queued at every third failed reconnection (its
  // maxRetriesPerRequest), about every 6 s in a long outage, while a renewal round is a third
  // of RESERVATION_TTL_MS (200 s by default): at the reconnect it holds no renewal. With 600 ms
  // holds it would hold the last ones, sent at the reconnect; none here, as in production.
  client = new Redis({
    port: relay.port,
    host: '127.0.0.1',
    maxRetriesPerRequest: 2,
    commandTimeout: 300,
    enableOfflineQueue: false,
  });
  client.on('error', () => undefined);
  await new Promise((resolve) => client.once('ready', resolve));
});

afterAll(async () => {
  await relay.cut();
  client?.disconnect();
  direct?.disconnect();
  server?.close();
});

describe('a spooled settle across a Redis outage longer than its holds’ lapse', () => {
  it('keeps its holds at the reconnect: a request admitted right then is refused', async () => {
    const { budget } = createMoneyLayer({
      db,
      redis: client,
      keys,
      scripts: defineScripts(client),
      reservationTtlMs: HOLD_TTL_MS,
    });
    const { spool } = testSettleSpool({ db, redis: client, keys, budget }, prefix);
    await spool.open();
    const orgId = `org_spool_reconnect_${Date.now()}`;
    const walletKey = keys.wallet(orgId);
    await client.hset(walletKey, 'balance', '1000', 'reserved', '0');
    const record = usageRecord(orgId, 800n, { walletCostNano: 800n, reservedNano: 800n });
    const accounts = walletAccounts(record);
    expect(
      await budget.reserve({ requestId: record.requestId, accounts, amountNano: 800n }),
    ).toMatchObject({ kind: 'held' });
    // Its settle met Redis out of reach: spooled. The outage outlasts the hold's lapse.
    await spool.append(record, accounts);
    await relay.cut();
    await new Promise((resolve) => setTimeout(resolve, HOLD_TTL_MS * 3));
    // Lapsed, and still listed: nothing ran in Redis meanwhile.
    const [member, lapsesAtMs] = await direct.zrange(
      keys.holdExpiries(walletKey),
      0,
      -1,
      'WITHSCORES',
    );
    expect(member).toBe(`${record.requestId}:800`);
    expect(Number(lapsesAtMs)).toBeLessThan(Date.now());
    // Redis is reachable again; this instance admits a request for 800 the moment its
    // connection is ready (before the spool has replayed anything).
    const atReconnect = new Promise<ReserveOutcome>((resolve, reject) =>
      client.once('ready', () =>
        budget
          .reserve({ requestId: newRequestId(), accounts, amountNano: 800n })
          .then(resolve, reject),
      ),
    );
    await relay.open();
    expect(await atReconnect).toMatchObject({ kind: 'wallet_short', availableNano: 200n });
    expect(await direct.hget(walletKey, 'reserved')).toBe('800');
    await spool.stop();
  });
});
