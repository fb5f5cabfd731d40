// A request admitted just before its accounts' period ends and settled after it: admission picks
// the periods of the accounts it holds on (the org and connection caps by calendar month, the
// product user's by their anchored period), settle charges those accounts, and the usage record
// is dated at that same admission instant (docs/decisions.md, 402). So the ledger, an account
// rebuilt from it, and `gw reconcile` (which compares each live account with what a rebuild
// would install: the ledger plus the usage stream not written yet, before and after the writer
// drains) all count the request in the period whose accounts held it, never in the next one.
// Admission runs on the real money layer (Redis scripts, account loader) with its clock set.
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp, createOrganization } from '../src/admin/provisioning.js';
import type { CapRule } from '../src/billing/cap-policies.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { Reconciler } from '../src/billing/reconcile.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { admit, type Admission, type AdmissionPorts } from '../src/inference/admission.js';
import { chatCompletionsRateLimitHeaders } from '../src/inference/rate-limit-headers.js';
import { settleWithRetry } from '../src/inference/settle-retry.js';
import type { RequestOutcome } from '../src/inference/settlement.js';
import { costNano, numericToNano } from '../src/money.js';
import { monthlyPeriod, type Period } from '../src/periods.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { identity as fakeIdentity, model } from './support/pipeline-fakes.js';
import { deletePrefix, testRedis } from './support/services.js';
import { testUsageWriter } from './support/usage-writer.js';

const prefix = uniquePrefix('periodturn');
const redis = testRedis();
const writerRedis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const layer = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
const writer = testUsageWriter(writerRedis, keys, db, 'period-turn', { claimIdleMs: 60_000 });
const reconciler = new Reconciler(db, redis, keys, scripts);
const logger = pino({ level: 'silent' });

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await Promise.all([redis.quit(), writerRedis.quit()]);
  await db.end();
});

const CAP_NANO = 10n ** 12n; // 1000 USD: never refuses
const rule = (id: string, amountNano: bigint | null): CapRule => ({
  id,
  amountNano,
  perUserAmountNano: null,
  currency: 'USD',
  creditMode: null,
  overrunPolicy: null,
  updatedAt: new Date(0),
});

/** The calendar month before the current one: its end has passed. */
const lastMonth = monthlyPeriod(
  new Date(monthlyPeriod(new Date(), null).start.getTime() - 1),
  null,
);
/**
 * A product user's allowance anchor an hour ago: their period ended then, recently enough for
 * its account to be loaded still (a period account lives a week past its end).
 */
const anchor = new Date(Date.now() - 3_600_000);
interface Turn {
  readonly name: string;
  /** The admission instant: the last millisecond of the period under test. */
  readonly admittedAt: Date;
  /** The accounts whose period ends right after the admission. */
  readonly turning: ReadonlyArray<'org_cap' | 'conn_cap' | 'user'>;
}

const turns: Turn[] = [
  {
    name: 'the calendar month (org and connection caps)',
    admittedAt: new Date(lastMonth.end.getTime() - 1),
    turning: ['org_cap', 'conn_cap'],
  },
  {
    name: "the product user's anchored allowance period",
    admittedAt: new Date(anchor.getTime() - 1),
    turning: ['user'],
  },
];

async function setUp(admittedAt: Date) {
  const orgId = await createOrganization(db, `period turn ${prefix}`);
  const appId = await createApp(db, orgId, 'app');
  const productUserId = `pu_${orgId}`;
  await db.query(
    `INSERT INTO product_users (id, org_id, app_id, external_user_id, allowance_starts_at)
     VALUES ($1, $2, $3, 'customer', $4)`,
    [productUserId, orgId, appId, anchor],
  );
  await layer.wallets.topUp(orgId, CAP_NANO);
  const identity = {
    ...fakeIdentity,
    orgId,
    appId,
    appConnectionId: `conn_${orgId}`,
    keyId: `key_${orgId}`,
  };
  // The caps' accounts of the admission's month, as the loader would have installed them while
  // it lasted (last month's is past the week the loader still installs one for).
  const month = monthlyPeriod(admittedAt, null).key;
  for (const account of [
    keys.orgCap(orgId, month),
    keys.connectionCap(orgId, identity.appConnectionId, month),
  ]) {
    await scripts.accountLoad(
      { account, expiries: keys.holdExpiries(account) },
      { field: 'spent', amount_nano: '0', expire_at_ms: '' },
    );
  }
  return { orgId, productUserId, identity };
}

/** Admits one request at `admittedAt` through the real budget store. */
async function admitAt(
  admittedAt: Date,
  setup: Awaited<ReturnType<typeof setUp>>,
): Promise<Admission> {
  const ports: AdmissionPorts = {
    catalog: { get: (id) => (id === model.id ? model : undefined), list: () => [model] },
    productUsers: {
      resolve: () =>
        Promise.resolve({
          id: setup.productUserId,
          status: 'active',
          allowanceStartsAt: anchor,
        }),
    },
    capPolicies: {
      orgCap: () => Promise.resolve(rule('cap_org', CAP_NANO)),
      connectionCap: () => Promise.resolve(rule('cap_conn', CAP_NANO)),
      productUserCap: () => Promise.resolve(rule('cap_user', CAP_NANO)),
    },
    credentials: { choiceFor: () => Promise.resolve(null) },
    tokenCounter: { countInput: () => Promise.resolve(10) },
    budget: layer.budget,
    clock: () => admittedAt,
  };
  const admission = await admit(ports, {
    identity: setup.identity,
    requestId: newRequestId(),
    headers: { 'x-gw-external-user-id': 'customer' },
    body: {},
    modelId: model.id,
    inputTexts: ['hi'],
    requestedMaxTokens: 100,
    prepareCall: () => null,
    rateLimitHeaders: chatCompletionsRateLimitHeaders,
  });
  if (!('accounts' in admission)) throw new Error(`not admitted: ${JSON.stringify(admission)}`);
  return admission;
}

const completed = (): RequestOutcome => ({
  status: 'completed',
  reason: 'completed',
  upstreamStatus: 200,
  stream: false,
  startedAtMs: Date.now(),
  credentialId: null,
  mock: false,
  inputTokens: 10,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  cacheReadTokens: 0,
  outputTokens: 40,
  webSearchRequests: 0,
});

describe('a request admitted before its period ended and settled after', () => {
  for (const turn of turns) {
    it(`counts in the period it was admitted in everywhere: ${turn.name}`, async () => {
      const setup = await setUp(turn.admittedAt);
      const admission = await admitAt(turn.admittedAt, setup);
      const { accounts } = admission;
      const periods: Record<Turn['turning'][number], Period> = {
        org_cap: monthlyPeriod(turn.admittedAt, null),
        conn_cap: monthlyPeriod(turn.admittedAt, null),
        user: monthlyPeriod(turn.admittedAt, anchor),
      };
      // Admission held on the accounts of the periods its instant is in, which have ended.
      expect(accounts.orgCap!.period.key).toBe(periods.org_cap.key);
      expect(accounts.user!.period.key).toBe(periods.user.key);
      for (const name of turn.turning) expect(periods[name].end.getTime()).toBeLessThan(Date.now());

      await settleWithRetry({ services: { budget: layer.budget }, logger }, admission, completed());
      const accountKey = {
        org_cap: keys.orgCap(setup.orgId, periods.org_cap.key),
        conn_cap: keys.connectionCap(setup.orgId, accounts.appConnectionId, periods.conn_cap.key),
        user: keys.userSpend(setup.orgId, setup.productUserId, periods.user.key),
      };
      const spent = async (name: keyof typeof accountKey): Promise<bigint> =>
        BigInt((await redis.hget(accountKey[name], 'spent')) ?? '-1');
      const cost = costNano([10, model.price.input], [40, model.price.output]);
      for (const name of ['org_cap', 'conn_cap', 'user'] as const) {
        expect(await spent(name), `${name} charged`).toBe(cost);
      }

      // Before the record is written: every account agrees with the ledger plus the stream.
      const consistent = [
        { org_id: setup.orgId, status: 'consistent', accounts_checked: 4, drifts: [] },
      ];
      expect(await reconciler.run({ orgId: setup.orgId, repair: false })).toEqual(consistent);

      // Written, the record is in the ledger of the period it was held in, and only there.
      await writer.drainOnce();
      const { rows } = await db.query<{ created_at: Date }>(
        'SELECT created_at FROM usage_records WHERE request_id = $1',
        [admission.requestId],
      );
      expect(rows.map((row) => row.created_at.toISOString())).toEqual([
        turn.admittedAt.toISOString(),
      ]);
      const ledger = async (column: string, id: string, period: Period): Promise<bigint> => {
        const { rows: sums } = await db.query<{ spent: string }>(
          `SELECT COALESCE(sum(sell_cost), 0)::text AS spent FROM usage_records
            WHERE ${column} = $1 AND created_at >= $2 AND created_at < $3`,
          [id, period.start, period.end],
        );
        return numericToNano(sums[0]!.spent);
      };
      const owner = {
        org_cap: ['org_id', setup.orgId],
        conn_cap: ['app_connection_id', accounts.appConnectionId],
        user: ['product_user_id', setup.productUserId],
      } as const;
      for (const name of turn.turning) {
        const [column, id] = owner[name];
        const next = monthlyPeriod(periods[name].end, name === 'user' ? anchor : null);
        expect(await ledger(column, id, periods[name]), `${name}: its period`).toBe(cost);
        expect(await ledger(column, id, next), `${name}: the next period`).toBe(0n);
      }
      expect(await reconciler.run({ orgId: setup.orgId, repair: false })).toEqual(consistent);

      // Redis loses the user's account: it is rebuilt from the ledger to what it held.
      const userAccount = accountKey.user;
      await redis.del(userAccount, keys.holdExpiries(userAccount));
      await layer.loader.load(['user'], accounts);
      expect(await spent('user'), 'user rebuilt').toBe(cost);
    });
  }
});
