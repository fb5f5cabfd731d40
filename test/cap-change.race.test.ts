// A cap changed while an instance still has the old rule cached (until the `caps` pub/sub
// message reaches it): what that instance does with it, on the real Redis and Postgres
// (docs/decisions.md, 298). The account keys a request charges do not depend on the cap
// rule (a cap's account is the org's or the connection's calendar month; a user's, the
// user's period), so the stale instance charges the very account the fresh ones read and the
// ledger rebuilds: nothing is lost or counted twice. What it gets wrong is only the amount it
// admits against: after a cap is lowered, the requests it admits before the message arrives
// go past the new cap, by at most what they hold.
import { afterAll, describe, expect, it } from 'vitest';
import type { CapAccount, RequestAccounts } from '../src/billing/budget-store.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { numericToNano } from '../src/money.js';
import { monthlyPeriod } from '../src/periods.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { usageRecord } from './support/records.js';
import { deletePrefix, testRedis } from './support/services.js';
import { testUsageWriter } from './support/usage-writer.js';

const prefix = uniquePrefix('capchange');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const layer = () => createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
/** Two gateway instances: one has heard of the change, the other not yet. */
const fresh = layer().budget;
const stale = layer().budget;
const writer = testUsageWriter(redis, keys, db, 'cap-change', { claimIdleMs: 60_000 });
const period = monthlyPeriod(new Date(), null);
const COST = 1_000n;
let sequence = 0;

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

function accounts(orgId: string, capNano: bigint | null): RequestAccounts {
  const orgCap: CapAccount | null = capNano === null ? null : { capNano, period };
  return {
    orgId,
    appConnectionId: `conn_${orgId}`,
    orgCap,
    connectionCap: null,
    user: null,
    walletPays: false,
    credentials: null,
  };
}

/** Reserves COST through `instance` with its view of the cap; settles it when held. */
async function request(
  instance: typeof fresh,
  orgId: string,
  capNano: bigint | null,
): Promise<boolean> {
  const requestId = newRequestId();
  const view = accounts(orgId, capNano);
  const outcome = await instance.reserve({ requestId, accounts: view, amountNano: COST });
  if (outcome.kind !== 'held') return false;
  await instance.settle(
    usageRecord(orgId, COST, { requestId, appConnectionId: view.appConnectionId }),
    view,
  );
  return true;
}

async function ledgerSpent(orgId: string): Promise<bigint> {
  await writer.drainOnce();
  const { rows } = await db.query<{ spent: string }>(
    `SELECT COALESCE(sum(sell_cost), 0)::text AS spent FROM usage_records
      WHERE org_id = $1 AND created_at >= $2 AND created_at < $3`,
    [orgId, period.start, period.end],
  );
  return numericToNano(rows[0]!.spent);
}

const accountSpent = async (orgId: string): Promise<bigint | null> => {
  const spent = await redis.hget(keys.orgCap(orgId, period.key), 'spent');
  return spent === null ? null : BigInt(spent);
};

const newOrg = (): string => {
  sequence += 1;
  return `org_capchange_${Date.now()}_${sequence}`;
};

describe('an instance that has not heard of a cap change yet', () => {
  it('lowered: admits against the old amount, by at most what it admits before hearing, and charges the account everyone reads', async () => {
    const orgId = newOrg();
    for (let index = 0; index < 5; index += 1) {
      expect(await request(fresh, orgId, 10n * COST)).toBe(true);
    }
    // The cap goes from 10 to 5 requests' worth: the fresh instance refuses at once…
    expect(await request(fresh, orgId, 5n * COST)).toBe(false);
    // …the stale one admits up to the old cap until the message reaches it (here: never)…
    let admitted = 0;
    while (await request(stale, orgId, 10n * COST)) admitted += 1;
    expect(admitted).toBe(5);
    // …into the same account: the overshoot past the new cap is exactly what it admitted, and
    // every charge is where the ledger (and a rebuild) counts it.
    expect(await accountSpent(orgId)).toBe(10n * COST);
    expect(await ledgerSpent(orgId)).toBe(10n * COST);
    expect(await request(fresh, orgId, 5n * COST)).toBe(false);
  });

  it('set where there was none: its requests hold nothing on the cap but are charged to its account', async () => {
    const orgId = newOrg();
    expect(await request(fresh, orgId, 3n * COST)).toBe(true); // loads the cap's account
    for (let index = 0; index < 4; index += 1) {
      expect(await request(stale, orgId, null)).toBe(true);
    }
    expect(await accountSpent(orgId)).toBe(5n * COST);
    expect(await ledgerSpent(orgId)).toBe(5n * COST);
    expect(await request(fresh, orgId, 3n * COST)).toBe(false);
  });

  it('cleared: its requests are refused against the old cap a while longer, and charged as before', async () => {
    const orgId = newOrg();
    for (let index = 0; index < 2; index += 1) {
      expect(await request(fresh, orgId, 2n * COST)).toBe(true);
    }
    expect(await request(stale, orgId, 2n * COST)).toBe(false);
    expect(await request(fresh, orgId, null)).toBe(true);
    expect(await accountSpent(orgId)).toBe(3n * COST);
    expect(await ledgerSpent(orgId)).toBe(3n * COST);
  });
});
