// The dashboard's usage plots and product-user management, driven as a browser would (cookie,
// CSRF token, Origin) on a real gateway with the real Redis and Postgres: usage rows match the
// ledger to the nano-unit, a replayed usage entry counts once, block/unblock and grant revoke
// are seen at once by inference and the profile, and a viewer may read but not write.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDbPool } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import { formatNano, numericToNano } from '../src/money.js';
import { isolatedContext } from './support/context.js';
import { createMember, DashboardClient, signInTo, uniqueEmail } from './support/dashboard.js';
import { TEST_DATABASE_URL } from './support/env.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { ledgerRow, usageRecord } from './support/records.js';

const { env, db } = isolatedContext('dashboard-usage');
const sinkDb = createDbPool(TEST_DATABASE_URL, 2);
const sink = new PostgresUsageSink(sinkDb);
let gateway: GatewayProcess;
let tenant: SeededOrg;
interface UsageRow {
  key: string | null;
  currency: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  cache_read_tokens: number;
  web_search_requests: number;
  cost: string;
  wallet_cost: string;
  /** Rows grouped by product user: whose user it is (null: no product user, or none on record). */
  external_user_id?: string | null;
  app_id?: string | null;
}
interface Usage {
  group_by: string;
  from: string;
  to: string;
  data: UsageRow[];
}
interface Profile {
  product_end_user_id: string;
  status: string;
  credits: { available_credits: string; active_grant_count: number };
}
interface Grant {
  grant_id: string;
  status: string;
  amount: string;
  expires_at: string | null;
  credits: { available_credits: string };
}

const emails = { admin: uniqueEmail('admin'), viewer: uniqueEmail('viewer') };
/** The dashboard user ids of the members made in beforeAll, by role. */
const memberIds: Record<string, string> = {};
const DAY_MS = 24 * 3600 * 1000;
const isoDay = (date: Date): string => date.toISOString().slice(0, 10);
const chat = { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

const signedIn = (email: string): Promise<DashboardClient> => signInTo(gateway, email);

const infer = (externalUserId: string) =>
  postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat, {
    ...bearer(tenant.api_key),
    'x-gw-external-user-id': externalUserId,
  });

beforeAll(async () => {
  gateway = await startGateway(env);
  tenant = await seed(env);
  for (const [role, email] of Object.entries(emails)) {
    memberIds[role] = (await createMember(env, email, tenant.org_id, role)).id;
  }
});

afterAll(async () => {
  await gateway?.stop();
  await sinkDb.end();
});

/** What the ledger says, grouped as the API groups: sums of usage_records over whole UTC days. */
async function ledgerUsage(
  groupColumn: string,
  from: string,
  to: string,
  order = '1 NULLS LAST, 2',
): Promise<UsageRow[]> {
  const { rows } = await db.query<{
    key: string | null;
    currency: string;
    requests: number;
    input_tokens: number;
    output_tokens: number;
    total_tokens: number;
    cache_write_tokens: number;
    cache_write_1h_tokens: number;
    cache_read_tokens: number;
    web_search_requests: number;
    sell_cost: string;
    wallet_cost: string;
  }>(
    `SELECT ${groupColumn} AS key, currency, count(*)::int AS requests,
            sum(input_tokens)::int AS input_tokens, sum(output_tokens)::int AS output_tokens,
            sum(total_tokens)::int AS total_tokens,
            sum(cache_write_tokens)::int AS cache_write_tokens,
            sum(cache_write_1h_tokens)::int AS cache_write_1h_tokens,
            sum(cache_read_tokens)::int AS cache_read_tokens,
            sum(web_search_requests)::int AS web_search_requests, sum(sell_cost)::text AS sell_cost,
            sum(wallet_cost)::text AS wallet_cost
       FROM usage_records
      WHERE org_id = $1 AND created_at >= $2::date AND created_at < $3::date
      GROUP BY 1, 2 ORDER BY ${order}`,
    [tenant.org_id, from, to],
  );
  return rows.map(({ sell_cost: sell, wallet_cost: wallet, currency, ...rest }) => ({
    ...rest,
    currency: currency.trim(),
    cost: formatNano(numericToNano(sell)),
    wallet_cost: formatNano(numericToNano(wallet)),
  }));
}

describe('usage for plots', () => {
  it('answers rows matching the ledger to the nano-unit for every grouping, served inference included', async () => {
    // Real requests through the gateway (two product users), and ledger rows on other days,
    // models and connections with costs that are not round.
    for (const user of ['plot-a', 'plot-b', 'plot-a']) {
      const answer = await infer(user);
      expect(answer.status).toBe(200);
      await ledgerRow(db, answer.headers.get('x-request-id'), 'request_id');
    }
    const now = Date.now();
    await sink.write([
      usageRecord(tenant.org_id, 1_234_567_891n, {
        createdAt: new Date(now - 3 * DAY_MS),
        model: 'vendor_a/claude-x',
        appConnectionId: tenant.app_connection_id,
        walletCostNano: 7n,
        inputTokens: 10,
        cacheWriteTokens: 6,
        cacheWrite1hTokens: 2,
        cacheReadTokens: 3,
        webSearchRequests: 2,
      }),
      usageRecord(tenant.org_id, 3n, {
        createdAt: new Date(now - 3 * DAY_MS),
        model: 'vendor_a/claude-x',
        appConnectionId: 'conn_other',
        inputTokens: 1000,
        outputTokens: 1,
        cacheReadTokens: 900,
        webSearchRequests: 1,
      }),
      usageRecord(tenant.org_id, 999_999_999_999n, { createdAt: new Date(now - 40 * DAY_MS) }),
    ]);
    const admin = await signedIn(emails.viewer);
    const from = isoDay(new Date(now - 10 * DAY_MS));
    const to = isoDay(new Date(now + DAY_MS));
    const columns = {
      day: "to_char((created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD')",
      model: 'model',
      connection: 'app_connection_id',
      product_user: 'product_user_id',
    };
    for (const [groupBy, column] of Object.entries(columns)) {
      const answer = await admin.get<Usage>(
        `/dashboard/api/orgs/${tenant.org_id}/usage?group_by=${groupBy}&from=${from}&to=${to}`,
      );
      expect(answer.status, groupBy).toBe(200);
      expect(answer.body.group_by).toBe(groupBy);
      expect(answer.body.from).toBe(from);
      expect(answer.body.to).toBe(to);
      // product users come top spenders first
      const order = groupBy === 'product_user' ? 'sum(sell_cost) DESC, 1 NULLS LAST, 2' : undefined;
      const ledger = await ledgerUsage(column, from, to, order);
      expect(ledger.length, groupBy).toBeGreaterThan(1);
      // (whose each product user is: the test below)
      const sums = answer.body.data.map(({ external_user_id: _, app_id: __, ...row }) => row);
      expect(sums, groupBy).toEqual(ledger);
    }
    const byModel = await admin.get<Usage>(
      `/dashboard/api/orgs/${tenant.org_id}/usage?group_by=model&from=${from}&to=${to}`,
    );
    expect(byModel.body.data.find((row) => row.key === 'vendor_a/claude-x')).toMatchObject({
      requests: 2,
      input_tokens: 1010,
      cache_write_tokens: 6,
      cache_write_1h_tokens: 2,
      cache_read_tokens: 903,
      web_search_requests: 3,
      cost: '1.234567894000',
      wallet_cost: '0.000000007000',
    });
    const top = await admin.get<Usage>(
      `/dashboard/api/orgs/${tenant.org_id}/usage?group_by=product_user&from=${from}&to=${to}&limit=1`,
    );
    expect(top.body.data.map(({ external_user_id: _, app_id: __, ...row }) => row)).toEqual(
      (
        await ledgerUsage(columns.product_user, from, to, 'sum(sell_cost) DESC, 1 NULLS LAST, 2')
      ).slice(0, 1),
    );
    // The row 40 days back is outside the range and the default range (30 days).
    const byDefault = await admin.get<Usage>(`/dashboard/api/orgs/${tenant.org_id}/usage`);
    expect(byDefault.status).toBe(200);
    expect(byDefault.body.group_by).toBe('day');
    expect(byDefault.body.data.map((row) => row.cost)).not.toContain('999.999999999000');
  });

  it("names each product user's row by the app's own id (external_user_id, app_id), null when none is on record, never another org's", async () => {
    const now = Date.now();
    const from = isoDay(new Date(now - DAY_MS));
    const to = isoDay(new Date(now + DAY_MS));
    // Two users of this org through the gateway, one of them later removed from product_users.
    for (const user of ['named-user', 'removed-user']) {
      const answer = await infer(user);
      expect(answer.status).toBe(200);
      await ledgerRow(db, answer.headers.get('x-request-id'), 'request_id');
    }
    const idOf = async (orgId: string, externalUserId: string): Promise<string> => {
      const { rows } = await db.query<{ id: string }>(
        'SELECT id FROM product_users WHERE org_id = $1 AND external_user_id = $2',
        [orgId, externalUserId],
      );
      return rows[0]!.id;
    };
    const named = await idOf(tenant.org_id, 'named-user');
    const removed = await idOf(tenant.org_id, 'removed-user');
    // Another org's user, with usage of its own, and its id forged into this org's ledger.
    const other = await seed(env);
    const theirs = await postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat, {
      ...bearer(other.api_key),
      'x-gw-external-user-id': 'other-org-user',
    });
    expect(theirs.status).toBe(200);
    await ledgerRow(db, theirs.headers.get('x-request-id'), 'request_id');
    const foreign = await idOf(other.org_id, 'other-org-user');
    await sink.write([
      usageRecord(tenant.org_id, 11n, { productUserId: foreign }),
      usageRecord(tenant.org_id, 12n), // no product user
    ]);
    // The ledger's records of a removed user go with it (ON DELETE CASCADE); the rollups stay.
    await db.query('DELETE FROM product_users WHERE id = $1', [removed]);

    const viewer = await signedIn(emails.viewer);
    const answer = await viewer.get<Usage>(
      `/dashboard/api/orgs/${tenant.org_id}/usage?group_by=product_user&from=${from}&to=${to}&limit=1000`,
    );
    expect(answer.status).toBe(200);
    const row = (key: string | null) => answer.body.data.find((each) => each.key === key);
    expect(row(named)).toMatchObject({
      key: named,
      external_user_id: 'named-user',
      app_id: tenant.app_id,
      requests: 1,
    });
    expect(row(removed)).toMatchObject({ key: removed, external_user_id: null, app_id: null });
    expect(row(foreign)).toMatchObject({ key: foreign, external_user_id: null, app_id: null });
    expect(row(null)).toMatchObject({ key: null, external_user_id: null, app_id: null });
    expect(JSON.stringify(answer.body)).not.toContain('other-org-user');
    // Every product-user row carries both fields; other groupings carry neither.
    for (const each of answer.body.data) {
      expect(Object.keys(each)).toEqual(expect.arrayContaining(['external_user_id', 'app_id']));
    }
    const byDay = await viewer.get<Usage>(`/dashboard/api/orgs/${tenant.org_id}/usage`);
    expect(byDay.body.data.length).toBeGreaterThan(0);
    for (const each of byDay.body.data) expect(each).not.toHaveProperty('external_user_id');
    // The other org sees its own user by name, and none of this org's.
    const otherEmail = uniqueEmail('other-viewer');
    await createMember(env, otherEmail, other.org_id, 'viewer');
    const otherViewer = await signInTo(gateway, otherEmail);
    const mine = await otherViewer.get<Usage>(
      `/dashboard/api/orgs/${other.org_id}/usage?group_by=product_user&from=${from}&to=${to}`,
    );
    expect(mine.status).toBe(200);
    expect(mine.body.data).toEqual([
      expect.objectContaining({
        key: foreign,
        external_user_id: 'other-org-user',
        app_id: other.app_id,
      }),
    ]);
    expect(JSON.stringify(mine.body)).not.toContain('named-user');
    // …and this org's usage is not its to read.
    const across = await otherViewer.get<ErrorBody>(
      `/dashboard/api/orgs/${tenant.org_id}/usage?group_by=product_user`,
    );
    expect(across.status).toBe(404);
    expect(JSON.stringify(across.body)).not.toContain('named-user');
  });

  it('counts a replayed usage entry once, also when it comes back in a batch with new rows', async () => {
    const model = `vendor_b/replay-${Date.now()}`;
    const first = usageRecord(tenant.org_id, 500n, {
      model,
      cacheWriteTokens: 4,
      cacheWrite1hTokens: 4,
      cacheReadTokens: 5,
      webSearchRequests: 7,
    });
    await sink.write([first]);
    await sink.write([first]);
    await sink.write([first, usageRecord(tenant.org_id, 20n, { model, cacheReadTokens: 1 })]);
    const viewer = await signedIn(emails.viewer);
    const answer = await viewer.get<Usage>(
      `/dashboard/api/orgs/${tenant.org_id}/usage?group_by=model`,
    );
    expect(answer.body.data.find((row) => row.key === model)).toEqual({
      key: model,
      currency: 'USD',
      requests: 2,
      input_tokens: 20,
      output_tokens: 10,
      total_tokens: 30,
      cache_write_tokens: 4,
      cache_write_1h_tokens: 4,
      cache_read_tokens: 6,
      web_search_requests: 7,
      cost: '0.000000520000',
      wallet_cost: '0.000000000000',
    });
  });

  it('refuses a bad grouping or range with 400 gw_invalid_request', async () => {
    const viewer = await signedIn(emails.viewer);
    const base = `/dashboard/api/orgs/${tenant.org_id}/usage`;
    const cases: Array<[string, string]> = [
      ['?group_by=week', 'group_by'],
      ['?from=2026-02-30&to=2026-03-05', 'from: 2026-02-30 is not a calendar date'],
      ['?from=yesterday', 'from: must be a date (YYYY-MM-DD) or an RFC 3339 timestamp'],
      ['?from=2026-03-05&to=2026-03-05', 'from: must be before to'],
      ['?from=2025-01-01&to=2026-03-05', 'to: the range may span at most 366 days'],
      ['?from=2026-03-01T12:00:00Z&to=2026-03-05', 'from: usage is kept per UTC day'],
      // A timestamp's date is a calendar date, its hour 00–23, and midnight has no fraction.
      ['?from=2026-02-30T00:00:00Z&to=2026-03-05', 'from: 2026-02-30 is not a calendar date'],
      ['?from=2026-02-28T24:00:00Z&to=2026-03-05', 'from: must be a date (YYYY-MM-DD)'],
      ['?from=2026-03-01T00:00:00.0001Z&to=2026-03-05', 'from: usage is kept per UTC day'],
      // Days Postgres, RFC 3339 or the product-user plan cannot hold were 500s.
      ['?from=0000-01-01&to=0000-02-01', 'to: must be a day from 1970-01-01 to 9999-12-31'],
      [
        '?group_by=product_user&from=0050-01-01&to=0050-02-01',
        'to: must be a day from 1970-01-01 to 9999-12-31',
      ],
      ['?from=1969-12-31&to=1970-01-02', 'from: must be a day from 1970-01-01 to 9999-12-31'],
      [
        '?group_by=product_user&from=9999-12-01&to=9999-12-31T23:00:00-01:00',
        'to: must be a day from 1970-01-01 to 9999-12-31',
      ],
    ];
    for (const [query, message] of cases) {
      const answer = await viewer.get<ErrorBody>(`${base}${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error.code).toBe('gw_invalid_request');
      expect(answer.body.error.message, query).toContain(message);
    }
    const midnight = await viewer.get<Usage>(
      `${base}?from=2026-03-01T00:00:00Z&to=2026-03-05T00:00:00%2B00:00`,
    );
    expect(midnight.status).toBe(200);
    expect([midnight.body.from, midnight.body.to]).toEqual(['2026-03-01', '2026-03-05']);
  });
});

describe('product users', () => {
  it('are found by the prefix of their external id or display name, in pages', async () => {
    for (const user of ['search-1', 'search-2', 'other-3'])
      expect((await infer(user)).status).toBe(200);
    await db.query(
      "UPDATE product_users SET display_name = 'Searchable Sue' WHERE external_user_id = 'other-3' AND org_id = $1",
      [tenant.org_id],
    );
    const viewer = await signedIn(emails.viewer);
    const base = `/dashboard/api/orgs/${tenant.org_id}/product-users`;
    const found = await viewer.get<{
      data: Array<{ external_user_id: string }>;
      next_cursor: string | null;
    }>(`${base}?q=search`);
    expect(found.status).toBe(200);
    expect(found.body.data.map((user) => user.external_user_id)).toEqual([
      'search-1',
      'search-2',
      'other-3',
    ]);
    const firstPage = await viewer.get<{
      data: Array<{ external_user_id: string }>;
      next_cursor: string;
    }>(`${base}?q=search&limit=2`);
    expect(firstPage.body.data).toHaveLength(2);
    const secondPage = await viewer.get<{
      data: Array<{ external_user_id: string }>;
      next_cursor: string | null;
    }>(`${base}?q=search&limit=2&cursor=${firstPage.body.next_cursor}`);
    expect(secondPage.body.data.map((user) => user.external_user_id)).toEqual(['other-3']);
    expect(secondPage.body.next_cursor).toBeNull();
    const nul = await viewer.get<ErrorBody>(`${base}?q=a%00b`);
    expect(nul.status).toBe(400);
    expect(nul.body.error.code).toBe('gw_invalid_request');
    // LIKE's wildcards are matched literally
    const wildcard = await viewer.get<{ data: unknown[] }>(`${base}?q=%25`);
    expect(wildcard.body.data).toEqual([]);
  });

  it('block and unblock from the dashboard are seen by inference at once, audited, and need admin', async () => {
    expect((await infer('blockee')).status).toBe(200);
    const { rows } = await db.query<{ id: string }>(
      "SELECT id FROM product_users WHERE org_id = $1 AND external_user_id = 'blockee'",
      [tenant.org_id],
    );
    const userId = rows[0]!.id;
    const viewer = await signedIn(emails.viewer);
    const refused = await viewer.post<ErrorBody>(`/dashboard/api/product-users/${userId}/block`);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('gw_role_forbidden');
    expect((await infer('blockee')).status).toBe(200);

    const admin = await signedIn(emails.admin);
    const blocked = await admin.post<Profile>(`/dashboard/api/product-users/${userId}/block`);
    expect(blocked.status).toBe(200);
    expect(blocked.body).toMatchObject({ product_end_user_id: userId, status: 'blocked' });
    const denied = await infer('blockee');
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('gw_product_user_blocked');
    const profile = await viewer.get<Profile>(`/dashboard/api/product-users/${userId}`);
    expect(profile.body.status).toBe('blocked');

    const unblocked = await admin.post<Profile>(`/dashboard/api/product-users/${userId}/unblock`);
    expect(unblocked.status).toBe(200);
    expect(unblocked.body.status).toBe('active');
    expect((await infer('blockee')).status).toBe(200);
    const audit = await db.query(
      `SELECT org_id, user_id, action, object_type, object_id, details FROM dashboard_audit_log
        WHERE object_id = $1 ORDER BY id`,
      [userId],
    );
    const byAdmin = {
      org_id: tenant.org_id,
      user_id: memberIds.admin,
      object_type: 'product_user',
      object_id: userId,
      details: {},
    };
    expect(audit.rows).toEqual([
      { ...byAdmin, action: 'product_user.block' },
      { ...byAdmin, action: 'product_user.unblock' },
    ]);
  });

  it('credit grants: granted, listed, and a revoke is seen by the profile at once; viewers may only read', async () => {
    expect((await infer('granted')).status).toBe(200);
    const { rows } = await db.query<{ id: string }>(
      "SELECT id FROM product_users WHERE org_id = $1 AND external_user_id = 'granted'",
      [tenant.org_id],
    );
    const userId = rows[0]!.id;
    const admin = await signedIn(emails.admin);
    const viewer = await signedIn(emails.viewer);
    const grantsPath = `/dashboard/api/product-users/${userId}/credit-grants`;

    const viewerGrant = await viewer.post<ErrorBody>(grantsPath, { amount: '1' });
    expect(viewerGrant.status).toBe(403);
    expect(viewerGrant.body.error.code).toBe('gw_role_forbidden');
    const zero = await admin.post<ErrorBody>(grantsPath, { amount: '0' });
    expect(zero.status).toBe(400);
    expect(zero.body.error.message).toBe('amount: must be greater than zero');

    const huge = await admin.post<ErrorBody>(grantsPath, { amount: '1000000000000' });
    expect(huge.status).toBe(400);
    expect(huge.body.error.code).toBe('gw_amount_out_of_range');

    const granted = await admin.post<Grant>(grantsPath, {
      amount: '2.5',
      reason: 'support',
      expires_at: '2099-01-01T00:00:00+02:00',
    });
    expect(granted.status).toBe(201);
    expect(granted.body).toMatchObject({
      amount: '2.500000000000',
      expires_at: '2098-12-31T22:00:00.000Z',
      status: 'active',
      credits: { available_credits: '2.500000000000' },
    });
    const before = await viewer.get<Profile>(`/dashboard/api/product-users/${userId}`);
    expect(before.body.credits).toMatchObject({
      available_credits: '2.500000000000',
      active_grant_count: 1,
    });

    const viewerRevoke = await viewer.post<ErrorBody>(
      `/dashboard/api/credit-grants/${granted.body.grant_id}/revoke`,
    );
    expect(viewerRevoke.status).toBe(403);
    const revoked = await admin.post<Grant>(
      `/dashboard/api/credit-grants/${granted.body.grant_id}/revoke`,
    );
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({
      status: 'revoked',
      credits: { available_credits: '0.000000000000' },
    });
    const after = await viewer.get<Profile>(`/dashboard/api/product-users/${userId}`);
    expect(after.body.credits).toMatchObject({
      available_credits: '0.000000000000',
      active_grant_count: 0,
    });
    const again = await admin.post<ErrorBody>(
      `/dashboard/api/credit-grants/${granted.body.grant_id}/revoke`,
    );
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('gw_conflict');

    const list = await viewer.get<{ data: Array<{ grant_id: string; status: string }> }>(
      grantsPath,
    );
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      expect.objectContaining({ grant_id: granted.body.grant_id, status: 'revoked' }),
    ]);
    const audit = await db.query(
      `SELECT org_id, user_id, action, object_type, object_id, details FROM dashboard_audit_log
        WHERE object_id = $1 ORDER BY id`,
      [granted.body.grant_id],
    );
    const byAdmin = {
      org_id: tenant.org_id,
      user_id: memberIds.admin,
      object_type: 'credit_grant',
      object_id: granted.body.grant_id,
    };
    // The amount and the expiry as the admin wrote them.
    expect(audit.rows).toEqual([
      {
        ...byAdmin,
        action: 'credit_grant.create',
        details: {
          product_end_user_id: userId,
          amount: '2.5',
          currency: 'USD',
          expires_at: '2099-01-01T00:00:00+02:00',
          reason: 'support',
        },
      },
      { ...byAdmin, action: 'credit_grant.revoke', details: {} },
    ]);
  });
});
