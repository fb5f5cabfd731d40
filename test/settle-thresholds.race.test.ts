// settle.lua notes the cap marks (80%, 100%) a charge crosses and the wallet balance it leaves,
// in the usage record it appends: the facts the webhook events come from, at no extra round
// trip. Each charge is atomic, so under 200 concurrent settles exactly one record carries each
// mark of each account.
import { afterAll, describe, expect, it } from 'vitest';
import { createMoneyLayer } from '../src/billing/compose.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { readUsageStream } from '../src/ledger/unwritten-usage.js';
import { usageRecordFromFields } from '../src/ledger/usage-record.js';
import { monthlyPeriod } from '../src/periods.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { usageRecord } from './support/records.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('thresholds');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const { budget: store } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
const period = monthlyPeriod(new Date(), null);

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

describe('settle notes the marks it crosses', () => {
  it('exactly one of 200 concurrent settles carries each mark of each account', async () => {
    const orgId = `org_marks_${Date.now()}`;
    const cost = 1_000n;
    await redis.hset(keys.wallet(orgId), 'balance', '1000000', 'reserved', '0');
    const accounts: RequestAccounts = {
      orgId,
      appConnectionId: 'conn_marks',
      orgCap: { capNano: cost * 150n, period },
      connectionCap: { capNano: cost * 180n, period },
      user: { productUserId: 'pu_marks', capNano: cost * 100n, creditMode: 'track_only', period },
      walletPays: true,
      credentials: null,
    };
    const requests = Array.from({ length: 200 }, () => newRequestId());
    const held = await Promise.all(
      requests.map((requestId) => store.reserve({ requestId, accounts, amountNano: cost })),
    );
    // The org cap lets 150 through; the user (track_only) never refuses.
    expect(held.filter((outcome) => outcome.kind === 'held')).toHaveLength(150);
    await Promise.all(
      requests.map((requestId, index) =>
        held[index]!.kind === 'held'
          ? store.settle(
              usageRecord(orgId, cost, {
                requestId,
                appConnectionId: 'conn_marks',
                productUserId: 'pu_marks',
                walletCostNano: cost,
              }),
              accounts,
            )
          : undefined,
      ),
    );
    const records = (await readUsageStream(redis, keys.usageStream(orgId))).map(([, fields]) =>
      usageRecordFromFields(fields),
    );
    expect(records).toHaveLength(150);
    const crossings = records.flatMap((record) => record.thresholdCrossings ?? []);
    expect(crossings.map((crossing) => `${crossing.scope} ${crossing.threshold}`).sort()).toEqual([
      'conn 0.8',
      'org 0.8',
      'org 1.0',
      'user 0.8',
      'user 1.0',
    ]);
    for (const crossing of crossings) {
      expect(crossing.periodKey).toBe(period.key);
      const mark = crossing.threshold === '1.0' ? crossing.capNano : (crossing.capNano * 4n) / 5n;
      // The charge that crossed it: from below the mark to at or above it.
      expect(crossing.spentAfterNano).toBeGreaterThanOrEqual(mark);
      expect(crossing.spentAfterNano - cost).toBeLessThan(mark);
    }
    expect(
      crossings.find((crossing) => crossing.scope === 'org' && crossing.threshold === '1.0'),
    ).toMatchObject({ spentAfterNano: cost * 150n, capNano: cost * 150n });
    // The wallet paid each: every record says what it left, and all differ.
    const balances = records.map((record) => record.walletBalanceAfterNano);
    expect(new Set(balances).size).toBe(150);
    expect(balances.map(Number).sort((a, b) => a - b)[0]).toBe(1_000_000 - 150 * 1000);
  });

  it('a mark that is not a whole nano-unit rounds up; a BYOK request leaves no wallet balance', async () => {
    const orgId = `org_round_${Date.now()}`;
    await redis.hset(keys.wallet(orgId), 'balance', '1000', 'reserved', '0');
    const accounts: RequestAccounts = {
      orgId,
      appConnectionId: 'conn_round',
      orgCap: { capNano: 7n, period }, // 80% is 5.6: the mark is 6
      connectionCap: null,
      user: null,
      walletPays: false,
      credentials: null,
    };
    const settleOne = async (costNano: bigint) => {
      const requestId = newRequestId();
      expect((await store.reserve({ requestId, accounts, amountNano: costNano })).kind).toBe(
        'held',
      );
      await store.settle(
        usageRecord(orgId, costNano, { requestId, appConnectionId: 'conn_round' }),
        accounts,
      );
    };
    await settleOne(5n);
    await settleOne(1n);
    const records = (await readUsageStream(redis, keys.usageStream(orgId))).map(([, fields]) =>
      usageRecordFromFields(fields),
    );
    expect(records.map((record) => record.thresholdCrossings?.length)).toEqual([0, 1]);
    expect(records[1]!.thresholdCrossings![0]).toMatchObject({
      scope: 'org',
      threshold: '0.8',
      spentAfterNano: 6n,
    });
    expect(records.map((record) => record.walletBalanceAfterNano)).toEqual([null, null]);
  });

  it('a settle that carries a cap from before a raise fires no mark its charge did not cross', async () => {
    // Review of a level-triggered variant (docs/decisions.md, 307): a request admitted under
    // the old, lower cap and settled after the raise found the spend past the old cap's 80%
    // and fired it, and the mark then stayed noted for the period, so the real 80% of the new
    // cap never fired. A mark fires on the charge that crosses it, under the cap it carries.
    const orgId = `org_raised_${Date.now()}`;
    const accountsWith = (capNano: bigint): RequestAccounts => ({
      orgId,
      appConnectionId: 'conn_raised',
      orgCap: { capNano, period },
      connectionCap: null,
      user: null,
      walletPays: false,
      credentials: null,
    });
    const settleOne = async (costNano: bigint, capNano: bigint): Promise<string[]> => {
      const record = usageRecord(orgId, costNano, { appConnectionId: 'conn_raised' });
      expect(await store.settle(record, accountsWith(capNano))).toBe('settled');
      const entries = await readUsageStream(redis, keys.usageStream(orgId));
      const last = usageRecordFromFields(entries.at(-1)![1]);
      expect(last.requestId).toBe(record.requestId);
      return (last.thresholdCrossings ?? []).map(
        (crossing) => `${crossing.threshold} at ${crossing.spentAfterNano} of ${crossing.capNano}`,
      );
    };
    await redis.hset(keys.orgCap(orgId, period.key), 'spent', '5000', 'reserved', '0');
    // The cap goes from 10,000 to 20,000; a request under the new cap takes the spend to 8,500.
    expect(await settleOne(3_500n, 20_000n)).toEqual([]);
    // One admitted under 10,000 settles now: 8,600 is past that cap's 80%, but it crossed
    // nothing.
    expect(await settleOne(100n, 10_000n)).toEqual([]);
    // The new cap's 80% (16,000) fires when a charge crosses it.
    expect(await settleOne(7_400n, 20_000n)).toEqual(['0.8 at 16000 of 20000']);
  });
});
