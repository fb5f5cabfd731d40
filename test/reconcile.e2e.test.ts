// gw reconcile: live Redis accounts against the Postgres ledger. Consistent after real traffic
// (also with usage still waiting in the stream), an injected drift found to the nano-unit and
// repaired, and a repair run while requests keep settling corrects exactly the injected drift.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { bearer, getJson, postJson } from './support/http.js';
import { monthlyPeriod } from '../src/periods.js';
import {
  type GatewayProcess,
  runCliJson,
  seed,
  type SeededOrg,
  setProductUserCap,
  startGateway,
} from './support/processes.js';
import { eventually, firstChangedAnswer } from './support/services.js';

const { env, db, redis, prefix } = isolatedContext('reconcile');
let gateway: GatewayProcess;

interface Report {
  orgs_checked: number;
  consistent: number;
  drifted: number;
  repaired: number;
  busy: number;
  orgs: Array<{
    org_id: string;
    status: string;
    accounts_checked: number;
    drifts: Array<{
      account: string;
      product_user_id?: string;
      live: string;
      ledger: string;
      drift: string;
      repaired: boolean;
    }>;
  }>;
}

const reconcile = (org: SeededOrg, ...flags: string[]) =>
  runCliJson<Report>(['reconcile', '--org-id', org.org_id, ...flags], env);

async function chat(org: SeededOrg, user: string): Promise<void> {
  const response = await postJson(
    `${gateway.url}/v1/chat/completions`,
    {
      model: 'vendor_b/gpt-4o-mini',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'reconcile me' }],
      user,
    },
    bearer(org.api_key),
  );
  expect(response.status).toBe(200);
}

async function written(org: SeededOrg, count: number): Promise<void> {
  await eventually(async () => {
    const { rows } = await db.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM usage_records WHERE org_id = $1',
      [org.org_id],
    );
    return Number(rows[0]!.n) >= count ? true : undefined;
  }, 15_000);
}

const decimalOf = (nano: bigint) =>
  `${nano / 1_000_000_000n}.${(nano % 1_000_000_000n).toString().padStart(9, '0')}000`;

/** What one `chat` request costs (a throw-away user's, from the ledger). */
async function costOfOneRequest(org: SeededOrg): Promise<bigint> {
  await chat(org, 'cost-probe');
  await written(org, 1);
  const { rows } = await db.query<{ cost: string }>(
    'SELECT (sell_cost * 1000000000)::bigint::text AS cost FROM usage_records WHERE org_id = $1',
    [org.org_id],
  );
  return BigInt(rows[0]!.cost);
}

const walletKey = (org: SeededOrg) => `${prefix}:{o:${org.org_id}}:wallet`;

beforeAll(async () => {
  gateway = await startGateway(env);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('gw reconcile', () => {
  it('finds every live account consistent after real traffic', async () => {
    const org = await seed(env);
    for (let index = 0; index < 6; index += 1) await chat(org, `user-${index % 3}`);
    await written(org, 6);
    const report = await reconcile(org);
    expect(report).toMatchObject({ orgs_checked: 1, consistent: 1, drifted: 0, busy: 0, orgs: [] });
  });

  it('counts usage that is settled in Redis but not yet in Postgres', async () => {
    const slowWriter = await startGateway({ ...env, USAGE_FLUSH_INTERVAL_MS: '8000' });
    try {
      const org = await seed(env);
      await gateway.stop(); // only the slow writer runs: records wait in the stream
      for (let index = 0; index < 3; index += 1) {
        const response = await postJson(
          `${slowWriter.url}/v1/chat/completions`,
          { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'wait' }] },
          bearer(org.api_key),
        );
        expect(response.status).toBe(200);
      }
      const pending = await redis.xlen(`${prefix}:{o:${org.org_id}}:usage`);
      const report = await reconcile(org);
      expect(report).toMatchObject({ orgs_checked: 1, consistent: 1, drifted: 0 });
      // The measurement really ran with records outside the ledger (otherwise this proves little).
      expect(pending).toBeGreaterThan(0);
    } finally {
      await slowWriter.stop();
      gateway = await startGateway(env);
    }
  });

  it('reports an injected drift to the nano-unit, repairs it, and is consistent again', async () => {
    const org = await seed(env);
    await chat(org, 'drifter');
    await written(org, 1);
    const before = await redis.hget(walletKey(org), 'balance');
    await redis.hincrby(walletKey(org), 'balance', 1_234_567_891); // 1.234567891 too much
    const [userKey] = await redis.keys(`${prefix}:{o:${org.org_id}}:pu:*:spend:*`);
    const spentBefore = await redis.hget(userKey!, 'spent');
    await redis.hincrby(userKey!, 'spent', -7);

    const found = await reconcile(org);
    expect(found.drifted).toBe(1);
    const drifts = found.orgs[0]!.drifts;
    expect(drifts).toHaveLength(2);
    expect(drifts.find((drift) => drift.account === 'wallet')).toMatchObject({
      drift: '1.234567891000',
      repaired: false,
    });
    expect(drifts.find((drift) => drift.account === 'user_spend')).toMatchObject({
      drift: '-0.000000007000',
      repaired: false,
    });
    // Reporting changed nothing.
    expect(BigInt((await redis.hget(walletKey(org), 'balance'))!)).toBe(
      BigInt(before!) + 1_234_567_891n,
    );

    const repaired = await reconcile(org, '--repair');
    expect(repaired.repaired).toBe(1);
    expect(repaired.orgs[0]!.drifts.every((drift) => drift.repaired)).toBe(true);
    expect(await redis.hget(walletKey(org), 'balance')).toBe(before);
    expect(await redis.hget(userKey!, 'spent')).toBe(spentBefore);
    expect(await reconcile(org)).toMatchObject({ consistent: 1, orgs: [] });
  });

  it('repairs exactly the injected drift while requests keep settling', async () => {
    const org = await seed(env);
    await chat(org, 'warm');
    await written(org, 1);
    await redis.hincrby(walletKey(org), 'balance', -500_000_000); // 0.5 too little
    let running = true;
    let sent = 1;
    const traffic = (async () => {
      while (running) {
        await Promise.all(Array.from({ length: 4 }, (_u, i) => chat(org, `load-${i}`)));
        sent += 4;
      }
    })();
    let report: Report | undefined;
    try {
      // Several passes: a busy pass (settles during every measurement) leaves things alone.
      for (let pass = 0; pass < 10 && report?.repaired !== 1; pass += 1) {
        report = await reconcile(org, '--repair');
        // Whatever a pass reports, it is the injected drift and nothing else: settles
        // landing meanwhile never show up as drift.
        for (const drift of report.orgs.flatMap((entry) => entry.drifts)) {
          expect(drift).toMatchObject({ account: 'wallet', drift: '-0.500000000000' });
        }
      }
    } finally {
      running = false;
      await traffic;
    }
    expect(report!.repaired).toBe(1);
    expect(report!.orgs[0]!.drifts).toEqual([
      expect.objectContaining({ account: 'wallet', drift: '-0.500000000000', repaired: true }),
    ]);
    await written(org, sent);
    // Afterwards the live wallet is exactly top-ups − ledger.
    const { rows } = await db.query<{ balance: string }>(
      `SELECT ((SELECT sum(amount) FROM wallet_transactions WHERE org_id = $1)
              - (SELECT COALESCE(sum(wallet_cost), 0) FROM usage_records WHERE org_id = $1))::text AS balance`,
      [org.org_id],
    );
    const liveNano = BigInt((await redis.hget(walletKey(org), 'balance'))!);
    const [whole, fraction = ''] = rows[0]!.balance.split('.');
    const ledgerNano =
      BigInt(whole!) * 1_000_000_000n + BigInt(fraction.padEnd(9, '0').slice(0, 9));
    expect(liveNano).toBe(ledgerNano);
    expect(await reconcile(org)).toMatchObject({ consistent: 1, orgs: [] });
  });

  it('leaves a period key the user no longer uses alone, and restoring calendar periods keeps the month', async () => {
    const org = await seed(env);
    const user = 'anchored';
    const cost = await costOfOneRequest(org);
    const setCap = (requests: bigint) =>
      setProductUserCap(env, org.app_id, user, decimalOf(cost * requests), [
        '--overrun-policy',
        'reject',
      ]);
    const send = () =>
      postJson<{ error: { provider_specific_fields?: { error: { code: string } } } }>(
        `${gateway.url}/v1/chat/completions`,
        {
          model: 'vendor_b/gpt-4o-mini',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'reconcile me' }],
          user,
        },
        bearer(org.api_key),
      );
    const refusedCode = async () => (await send()).body.error.provider_specific_fields?.error.code;
    const putAnchor = async (anchor: string | null) => {
      const response = await fetch(`${gateway.url}/product-users/by-external-id`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...bearer(org.service_key) },
        body: JSON.stringify({
          app_id: org.app_id,
          external_user_id: user,
          allowance_starts_at: anchor,
        }),
      });
      // the gateway's cache drops the user when the invalidation this publishes arrives
      expect(response.status).toBe(200);
    };
    const refusedForTheCap = (answer: Awaited<ReturnType<typeof send>>): boolean =>
      answer.body.error?.provider_specific_fields?.error.code ===
      'gw_product_user_allowance_insufficient';
    const spendKey = async (period: string) => {
      const { rows } = await db.query<{ id: string }>(
        'SELECT id FROM product_users WHERE app_id = $1 AND external_user_id = $2',
        [org.app_id, user],
      );
      return `${prefix}:{o:${org.org_id}}:pu:${rows[0]!.id}:spend:${period}`;
    };
    const calendarKey = await (async () => {
      await setCap(10n);
      return spendKey(monthlyPeriod(new Date(), null).key);
    })();

    // The anchor goes before the spend, so the calendar month's key no longer names the
    // user's period: its spend is not that of the anchored month that contains its start.
    const anchor = new Date(Date.now() - 1000).toISOString();
    for (let index = 0; index < 10; index += 1) await chat(org, user);
    expect(await refusedCode()).toBe('gw_product_user_allowance_insufficient');
    await written(org, 11);
    await putAnchor(anchor);
    expect(await reconcile(org)).toMatchObject({ consistent: 1, drifted: 0, orgs: [] });
    expect(await reconcile(org, '--repair')).toMatchObject({ consistent: 1, repaired: 0 });
    expect(await redis.hget(calendarKey, 'spent')).toBe(String(cost * 10n));

    // Two more under the anchored period (a raised cap), then calendar periods again: the
    // month's account counts all twelve.
    await setCap(12n);
    // The new cap reaches the gateway by pub/sub (after the anchor's, published before it):
    // refused as at the old cap until it arrives.
    expect((await firstChangedAnswer(send, refusedForTheCap)).status).toBe(200);
    await chat(org, user);
    expect(await refusedCode()).toBe('gw_product_user_allowance_insufficient');
    await putAnchor(null);
    const profile = await getJson<{ allowance: Record<string, string> }>(
      `${gateway.url}/product-users/by-external-id?app_id=${org.app_id}&external_user_id=${user}`,
      bearer(org.service_key),
    );
    expect(profile.body.allowance).toMatchObject({
      spent_this_period: decimalOf(cost * 12n),
      remaining_base_allowance: '0.000000000000',
      available_allowance: '0.000000000000',
    });
    // Once the gateway has dropped the anchored user it had cached, the next request counts in
    // the calendar month again, whose account holds all twelve.
    await eventually(async () => {
      expect(await refusedCode()).toBe('gw_product_user_allowance_insufficient');
      const [spent] = await redis.hmget(calendarKey, 'spent');
      return spent === String(cost * 12n) ? true : undefined;
    });
    await written(org, 13);
    expect(await redis.hmget(calendarKey, 'spent', 'reserved')).toEqual([String(cost * 12n), '0']);
    expect(await reconcile(org)).toMatchObject({ consistent: 1, drifted: 0, orgs: [] });
  });
});
