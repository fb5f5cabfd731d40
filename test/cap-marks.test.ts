// A cap set below what the month has already spent fires the marks it passes when it is set:
// no charge will cross them, and under a cap that refuses none comes at all (docs/decisions.md,
// 307). On the real Redis and Postgres, through setCapAs as the dashboard and the CLI call it.
import { afterAll, describe, expect, it } from 'vitest';
import { capInvalidation, setCapAs, type CapTarget } from '../src/admin/caps.js';
import { createAppConnection, createApp, createOrganization } from '../src/admin/provisioning.js';
import { invalidationPublisher } from '../src/cache/invalidation.js';
import { createDbPool } from '../src/db/pool.js';
import { newId } from '../src/ids.js';
import { monthlyPeriod } from '../src/periods.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { firingCapMarks } from '../src/usage-events/cap-marks.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { deletePrefix, testRedis } from './support/services.js';
import { usageRecord } from './support/records.js';
import { addCatchAllEndpoint, messageData } from './support/webhook-messages.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';

const prefix = uniquePrefix('capmarks');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const caps = firingCapMarks(
  capInvalidation(redis, keys, invalidationPublisher(redis, keys.invalidationChannel())),
  { db, redis, keys },
);
const actor = { userId: 'cli' };
const period = monthlyPeriod(new Date(), null);

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

/** An org with an endpoint that takes every event (its messages are what fired). */
async function orgWithEndpoint(): Promise<string> {
  const orgId = await createOrganization(db, `cap marks ${Date.now()}`);
  await addCatchAllEndpoint(db, orgId);
  return orgId;
}

/** The cap.threshold messages of `orgId`: threshold, amount and spend of each. */
async function fired(orgId: string): Promise<string[]> {
  const events = await messageData<{
    threshold: number;
    amount: string;
    spent_this_period: string;
    scope: string;
  }>(db, orgId, 'cap.threshold');
  return events.map(
    (data) => `${data.scope} ${data.threshold} of ${data.amount} at ${data.spent_this_period}`,
  );
}

const setCap = (target: CapTarget, amountNano: bigint) =>
  setCapAs(db, caps, actor, target, { amountNano, currency: 'USD' });
const setOrgCap = (orgId: string, amountNano: bigint) =>
  setCap({ scope: 'org', orgId }, amountNano);

describe('a cap set below the spend', () => {
  it('fires the marks it passes once, from the live account, and a raise fires nothing', async () => {
    const orgId = await orgWithEndpoint();
    await redis.hset(keys.orgCap(orgId, period.key), 'spent', '9000000000', 'reserved', '0');
    expect((await setOrgCap(orgId, 20_000_000_000n)).warnings).toEqual([]); // 45 %: nothing
    expect(await fired(orgId)).toEqual([]);
    expect((await setOrgCap(orgId, 10_000_000_000n)).warnings).toEqual([]); // 90 %: the 80 % mark
    expect(await fired(orgId)).toEqual(['org 0.8 of 10.000000000000 at 9.000000000000']);
    // past the cap: 100 %, and 80 % only once; the writer is told the cap is used up
    expect((await setOrgCap(orgId, 8_000_000_000n)).warnings).toEqual([
      'the cap (8.000000000000 USD) is not above what the organization has spent this period ' +
        '(9.000000000000 USD): every request under it is refused until the month turns or the cap ' +
        'is raised',
    ]);
    await setOrgCap(orgId, 5_000_000_000n);
    expect(await fired(orgId)).toEqual([
      'org 0.8 of 10.000000000000 at 9.000000000000',
      'org 1 of 8.000000000000 at 9.000000000000',
    ]);
    await setOrgCap(orgId, 50_000_000_000n);
    expect(await fired(orgId)).toHaveLength(2);
  });

  it("reads a connection's spend from the ledger when Redis does not have its account", async () => {
    const orgId = await orgWithEndpoint();
    const appId = await createApp(db, orgId, 'cap marks app');
    const connectionId = await createAppConnection(db, orgId, appId, 'cap marks connection');
    await new PostgresUsageSink(db).write([
      usageRecord(orgId, 3_000_000_000n, { appConnectionId: connectionId }),
      usageRecord(orgId, 1_500_000_000n, { appConnectionId: connectionId }),
    ]);
    expect(await redis.exists(keys.connectionCap(orgId, connectionId, period.key))).toBe(0);
    const set = await setCap(
      { scope: 'app_connection', appConnectionId: connectionId },
      5_000_000_000n,
    );
    expect(set.warnings).toEqual([]);
    expect(await fired(orgId)).toEqual(['app_connection 0.8 of 5.000000000000 at 4.500000000000']);
    const lowered = await setCap(
      { scope: 'app_connection', appConnectionId: connectionId },
      4_500_000_000n,
    );
    expect(lowered.warnings).toEqual([
      'the cap (4.500000000000 USD) is not above what the connection has spent this period ' +
        '(4.500000000000 USD): every request under it is refused until the month turns or the cap ' +
        'is raised',
    ]);
  });

  it("fires a product user's allowance marks in the user's own period", async () => {
    const orgId = await orgWithEndpoint();
    const appId = await createApp(db, orgId, 'cap marks app');
    const userId = newId('pu');
    // The user's period starts on the 10th (an anchor), so its account is keyed by that start.
    const anchor = new Date(Date.UTC(2026, 0, 10));
    await db.query(
      `INSERT INTO product_users (id, org_id, app_id, external_user_id, allowance_starts_at,
                                  allowance_anchor_floor)
       VALUES ($1, $2, $3, $4, $5, $5)`,
      [userId, orgId, appId, `ext_${userId}`, anchor],
    );
    const userPeriod = monthlyPeriod(new Date(), anchor);
    await redis.hset(keys.userSpend(orgId, userId, userPeriod.key), 'spent', '2000000000');
    const set = await setCap({ scope: 'product_user', productUserId: userId }, 2_000_000_000n);
    expect(set.warnings).toEqual([
      'the cap (2.000000000000 USD) is not above what the product user has spent this period ' +
        "(2.000000000000 USD): every request under it is refused once the user's credits are spent, " +
        "until the user's period turns or the cap is raised",
    ]);
    const events = await messageData<{
      product_end_user_id: string;
      threshold: number;
      allowance: { period_start: string; spent_this_period: string; cap_amount: string };
    }>(db, orgId, 'product_user.allowance_threshold');
    expect(events.map((event) => event.threshold)).toEqual([0.8, 1]);
    for (const event of events) {
      expect(event.product_end_user_id).toBe(userId);
      expect(event.allowance).toMatchObject({
        period_start: userPeriod.start.toISOString(),
        spent_this_period: '2.000000000000',
        cap_amount: '2.000000000000',
      });
    }
    // No cap.threshold for a user's cap.
    expect(await fired(orgId)).toEqual([]);
  });
});
