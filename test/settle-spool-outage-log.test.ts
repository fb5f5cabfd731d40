// Spooled settles waiting while Redis is out of reach: their hold renewals fail every third of
// the lapse, each of them. The log says so once when renewals start failing and once when they
// succeed again, with how many failed meanwhile, not a line per entry per renewal (decision
// 580). A private redis-server, killed and started again (the shared one is never stopped);
// holds lapse after 600 ms here.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMoneyLayer } from '../src/billing/compose.js';
import { connectRedis, type RedisClient } from '../src/redis/connect.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { isolatedContext } from './support/context.js';
import { privateRedis, type PrivateRedis } from './support/private-redis.js';
import { usageRecord, walletAccounts } from './support/records.js';
import { eventually } from './support/services.js';
import { testSettleSpool } from './support/settle-spool.js';

const { prefix, db } = isolatedContext('spool-outage');
const HOLD_TTL_MS = 600;
const ENTRIES = 3;
const keys = createRedisKeys(prefix);
let server: PrivateRedis;
let client: RedisClient;

/** The lines the budget store logs. */
const lines: Array<Record<string, unknown>> = [];
const logger = pino(
  { level: 'info' },
  { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
);
const logged = (message: string): Array<Record<string, unknown>> =>
  lines.filter((line) => line.msg === message);

beforeAll(async () => {
  server = await privateRedis('spool-outage');
  // The gateway's client, as src/composition/redis.ts builds it, with a short bound.
  client = connectRedis(
    { kind: 'single', url: `redis://127.0.0.1:${server.port}` },
    { maxRetriesPerRequest: 2, commandTimeoutMs: 300 },
  );
  client.on('error', () => undefined);
  await server.start();
});

afterAll(() => {
  client?.disconnect();
  server?.close();
});

describe('spooled settles while Redis is out of reach', () => {
  it('log that their hold renewals fail once, and once that they succeed again, with the count', async () => {
    const { budget } = createMoneyLayer({
      db,
      redis: client,
      keys,
      scripts: defineScripts(client),
      reservationTtlMs: HOLD_TTL_MS,
      logger,
    });
    const { spool } = testSettleSpool({ db, redis: client, keys, budget }, prefix);
    await spool.open();
    const orgId = `org_spool_outage_${Date.now()}`;
    await client.hset(keys.wallet(orgId), 'balance', '1000000', 'reserved', '0');
    for (let entry = 0; entry < ENTRIES; entry += 1) {
      const record = usageRecord(orgId, 100n, { walletCostNano: 100n, reservedNano: 100n });
      const accounts = walletAccounts(record);
      expect(
        await budget.reserve({ requestId: record.requestId, accounts, amountNano: 100n }),
      ).toMatchObject({ kind: 'held' });
      await spool.append(record, accounts);
    }
    server.kill();
    // Five lapses: about fifteen renewal rounds of every entry fail.
    await new Promise((resolve) => setTimeout(resolve, HOLD_TTL_MS * 5));
    await server.start();
    await eventually(async () =>
      logged('hold renewals succeed again').length > 0 ? true : undefined,
    );
    await spool.stop();

    expect(logged('hold renewal failed')).toEqual([]);
    expect(logged('hold renewals fail: holds lapse if Redis stays out of reach')).toHaveLength(1);
    const recovered = logged('hold renewals succeed again');
    expect(recovered).toHaveLength(1);
    // Every entry's renewals failed several rounds in a row, and each was counted.
    expect(recovered[0]!.failed).toBeGreaterThanOrEqual(ENTRIES * 2);
  });
});
