// The wallet and the organization overview through the dashboard API, on the real Redis and
// Postgres: the live balance, the paged history of top-ups, dashboard top-ups only where the
// operator switched them on (never together with self-service sign-up), and an overview whose
// spend, requests, top models and top product users match the ledger to the nano-unit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { formatNano, numericToNano } from '../src/money.js';
import { monthlyPeriod } from '../src/periods.js';
import { isolatedContext } from './support/context.js';
import { createMember, signInTo, uniqueEmail } from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';

const { env, db } = isolatedContext('dash-wallet');
/** Top-ups from the dashboard off (the default) on the first, on for the second. */
let locked: GatewayProcess;
let open: GatewayProcess;
let tenant: SeededOrg;

interface Wallet {
  org_id: string;
  balance: string;
  reserved: string;
  available: string;
  currency: string;
}
interface Transaction {
  id: string;
  kind: string;
  amount: string;
  currency: string;
  created_by: string | null;
  created_at: string;
}
interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

const emails = {
  owner: uniqueEmail('wallet-owner'),
  admin: uniqueEmail('wallet-admin'),
  member: uniqueEmail('wallet-member'),
  viewer: uniqueEmail('wallet-viewer'),
};

const chat = (model: string, user?: string) => ({
  model,
  max_tokens: 8,
  messages: [{ role: 'user', content: 'hello there' }],
  ...(user !== undefined && { user }),
});

beforeAll(async () => {
  [locked, open] = await Promise.all([
    startGateway(env),
    startGateway({ ...env, DASHBOARD_WALLET_TOPUP: 'true' }),
  ]);
  tenant = await seed(env, ['--wallet', '100.00']);
  for (const [role, email] of Object.entries(emails)) {
    await createMember(env, email, tenant.org_id, role);
  }
});

afterAll(async () => {
  await Promise.all([locked?.stop(), open?.stop()]);
});

describe('the wallet', () => {
  it('any member reads the live balance, which follows what requests spend', async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const email = uniqueEmail('wallet-reader');
    await createMember(env, email, org.org_id, 'viewer');
    const viewer = await signInTo(locked, email);
    const before = await viewer.get<Wallet>(`/dashboard/api/orgs/${org.org_id}/wallet`);
    expect(before.status).toBe(200);
    expect(before.body).toEqual({
      org_id: org.org_id,
      balance: '100.000000000000',
      reserved: '0.000000000000',
      available: '100.000000000000',
      currency: 'USD',
      top_ups_enabled: false,
    });
    const answer = await postJson(
      `${locked.url}/v1/chat/completions`,
      chat('vendor_b/gpt-4o-mini'),
      bearer(org.api_key),
    );
    expect(answer.status).toBe(200);
    const requestId = answer.headers.get('x-request-id')!;
    const cost = await eventually(async () => {
      const { rows } = await db.query<{ wallet_cost: string }>(
        'SELECT wallet_cost::text FROM usage_records WHERE request_id = $1',
        [requestId],
      );
      return rows[0] ? numericToNano(rows[0].wallet_cost) : undefined;
    });
    expect(cost).toBeGreaterThan(0n);
    const after = await viewer.get<Wallet>(`/dashboard/api/orgs/${org.org_id}/wallet`);
    expect(after.body.balance).toBe(formatNano(100_000_000_000n - cost));
  });

  it('lists top-ups and balance sets oldest first, paged, with who made them', async () => {
    await runCliJson(['wallet', 'topup', '--org-id', tenant.org_id, '--amount', '5.5'], env);
    await runCliJson(['wallet', 'set', '--org-id', tenant.org_id, '--amount', '100'], env);
    const viewer = await signInTo(locked, emails.viewer);
    const path = `/dashboard/api/orgs/${tenant.org_id}/wallet/transactions`;
    const first = await viewer.get<Page<Transaction>>(`${path}?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual([
      {
        id: expect.stringMatching(/^\d+$/),
        kind: 'topup',
        amount: '100.000000000000',
        currency: 'USD',
        created_by: 'cli', // the seed: the operator's top-up
        created_at: expect.any(String),
      },
      expect.objectContaining({ kind: 'topup', amount: '5.500000000000', created_by: 'cli' }),
    ]);
    const second = await viewer.get<Page<Transaction>>(
      `${path}?limit=2&cursor=${first.body.next_cursor}`,
    );
    expect(second.body).toEqual({
      data: [
        expect.objectContaining({ kind: 'set', amount: '-5.500000000000', created_by: 'cli' }),
      ],
      next_cursor: null,
    });
    const { rows } = await db.query<{ action: string }>(
      `SELECT action FROM dashboard_audit_log WHERE org_id = $1 AND action LIKE 'wallet.%' ORDER BY id`,
      [tenant.org_id],
    );
    // the seed's top-up, then the CLI's two writes
    expect(rows).toEqual([
      { action: 'wallet.topup' },
      { action: 'wallet.topup' },
      { action: 'wallet.set' },
    ]);
    const bad = await viewer.get<ErrorBody>(`${path}?cursor=not-a-cursor`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('gw_invalid_request');
  });

  it('refuses dashboard top-ups where the operator has not switched them on, recording nothing', async () => {
    const owner = await signInTo(locked, emails.owner);
    const answer = await owner.post<ErrorBody>(
      `/dashboard/api/orgs/${tenant.org_id}/wallet/top-ups`,
      { amount: '10' },
    );
    expect(answer.status).toBe(403);
    expect(answer.body.error.code).toBe('gw_wallet_topup_disabled');
    // who can add funds instead (decision 582)
    expect(answer.body.error.message).toBe(
      'wallet top-ups from the dashboard are off on this gateway (DASHBOARD_WALLET_TOPUP): the operator of this gateway adds funds (gw wallet topup)',
    );
    const { rows } = await db.query(
      `SELECT 1 FROM wallet_transactions WHERE org_id = $1 AND created_by LIKE 'usr_%'`,
      [tenant.org_id],
    );
    expect(rows).toEqual([]);
  });

  it('where switched on, an owner or admin tops up: recorded with who did it, audited, and spendable at once', async () => {
    const org = await seed(env, ['--wallet', '0.000001']);
    const email = uniqueEmail('topper');
    const member = await createMember(env, email, org.org_id, 'admin');
    const admin = await signInTo(open, email);
    const starved = await postJson<ErrorBody>(
      `${open.url}/v1/chat/completions`,
      chat('vendor_b/gpt-4o-mini'),
      bearer(org.api_key),
    );
    expect(starved.status).toBe(402);
    expect(starved.body.error.code).toBe('gw_reservation_insufficient_balance');

    const topUp = await admin.post<{ transaction: Transaction; wallet: Wallet }>(
      `/dashboard/api/orgs/${org.org_id}/wallet/top-ups`,
      { amount: '25.5' },
    );
    expect(topUp.status).toBe(201);
    expect(topUp.body.transaction).toMatchObject({
      kind: 'topup',
      amount: '25.500000000000',
      created_by: member.id,
    });
    expect(topUp.body.wallet).toMatchObject({ balance: '25.500001000000' });
    const wallet = await admin.get<Wallet & { top_ups_enabled: boolean }>(
      `/dashboard/api/orgs/${org.org_id}/wallet`,
    );
    expect(wallet.body.top_ups_enabled).toBe(true);
    const { rows } = await db.query(
      `SELECT user_id, action, object_type, object_id, details FROM dashboard_audit_log
        WHERE org_id = $1 AND action = 'wallet.topup' AND user_id <> 'cli'`,
      [org.org_id],
    );
    expect(rows).toEqual([
      {
        user_id: member.id,
        action: 'wallet.topup',
        object_type: 'wallet_transaction',
        object_id: topUp.body.transaction.id,
        details: { amount: '25.500000000000' },
      },
    ]);
    const served = await postJson(
      `${open.url}/v1/chat/completions`,
      chat('vendor_b/gpt-4o-mini'),
      bearer(org.api_key),
    );
    expect(served.status).toBe(200);
  });

  it('top-ups need admin or owner, a positive amount within the limit; refusals record nothing', async () => {
    const path = `/dashboard/api/orgs/${tenant.org_id}/wallet/top-ups`;
    const count = async () =>
      (
        await db.query('SELECT count(*)::int AS n FROM wallet_transactions WHERE org_id = $1', [
          tenant.org_id,
        ])
      ).rows[0];
    const before = await count();
    for (const role of ['viewer', 'member'] as const) {
      const client = await signInTo(open, emails[role]);
      const refused = await client.post<ErrorBody>(path, { amount: '1' });
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('gw_role_forbidden');
    }
    const admin = await signInTo(open, emails.admin);
    for (const [amount, code] of [
      ['0', 'gw_invalid_request'],
      ['-1', 'gw_invalid_request'],
      ['abc', 'gw_invalid_request'],
      ['1000000.000000001', 'gw_amount_out_of_range'],
      // The balance it would make is past the limit.
      ['999999.99', 'gw_amount_out_of_range'],
    ] as const) {
      const refused = await admin.post<ErrorBody>(path, { amount });
      expect(refused.status, amount).toBe(400);
      expect(refused.body.error.code, amount).toBe(code);
    }
    // a JSON number is told the form an amount takes; a missing one that it is required
    for (const [body, message] of [
      [{ amount: 25.5 }, 'amount: must be a decimal amount in a string, such as "10.00"'],
      [{}, 'amount: is required'],
    ] as const) {
      const refused = await admin.post<ErrorBody>(path, body);
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code: 'gw_invalid_request', message });
    }
    const noToken = await admin.post<ErrorBody>(path, { amount: '1' }, { csrf: false });
    expect(noToken.body.error.code).toBe('gw_csrf_token_invalid');
    expect(await count()).toEqual(before);
  });

  it('cannot be switched on together with self-service sign-up', () => {
    expect(() => loadConfig({ DASHBOARD_SIGNUP: 'true', DASHBOARD_WALLET_TOPUP: 'true' })).toThrow(
      ConfigError,
    );
    expect(() => loadConfig({ DASHBOARD_SIGNUP: 'true', DASHBOARD_WALLET_TOPUP: 'true' })).toThrow(
      /DASHBOARD_WALLET_TOPUP: cannot be true while DASHBOARD_SIGNUP is/,
    );
    expect(loadConfig({}).DASHBOARD_WALLET_TOPUP).toBe(false);
    expect(loadConfig({}).DASHBOARD_SIGNUP).toBe(false);
  });
});

describe('the organization overview', () => {
  it("matches the ledger: this month's spend against the org cap, requests, tokens, top models and product users", async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const email = uniqueEmail('overview');
    await createMember(env, email, org.org_id, 'viewer');
    await runCliJson(
      ['cap', 'set', '--scope', 'org', '--org-id', org.org_id, '--amount', '50'],
      env,
    );
    const viewer = await signInTo(locked, email);
    const empty = await viewer.get<Record<string, unknown>>(
      `/dashboard/api/orgs/${org.org_id}/overview`,
    );
    expect(empty.body).toMatchObject({
      spent_this_period: '0.000000000000',
      requests_this_period: 0,
      top_models: [],
      top_product_users: [],
      org_cap: { amount: '50.000000000000', remaining: '50.000000000000' },
    });

    const sends: [string, string | undefined][] = [
      ['vendor_b/gpt-4o-mini', 'alice'],
      ['vendor_b/gpt-4o-mini', 'alice'],
      ['vendor_b/gpt-4o-mini', 'alice'],
      ['vendor_a/claude-haiku-4-5', 'bob'],
      ['vendor_b/gpt-4o-mini', 'carol'],
      ['vendor_b/gpt-4o-mini', undefined],
    ];
    for (const [model, user] of sends) {
      const answer = await postJson(
        `${locked.url}/v1/chat/completions`,
        chat(model, user),
        bearer(org.api_key),
      );
      expect(answer.status, `${model} ${user}`).toBe(200);
    }
    const period = monthlyPeriod(new Date(), null);
    const ledger = await eventually(async () => {
      const { rows } = await db.query<{
        requests: string;
        sell: string;
        wallet: string;
        input: string;
        output: string;
      }>(
        `SELECT count(*)::text AS requests, sum(sell_cost)::text AS sell,
                sum(wallet_cost)::text AS wallet, sum(input_tokens)::text AS input,
                sum(output_tokens)::text AS output
           FROM usage_records WHERE org_id = $1 AND created_at >= $2`,
        [org.org_id, period.start],
      );
      return Number(rows[0]!.requests) === sends.length ? rows[0] : undefined;
    });
    const byModel = await db.query<{ model: string; requests: string; cost: string }>(
      `SELECT model, count(*)::text AS requests, sum(sell_cost)::text AS cost FROM usage_records
        WHERE org_id = $1 GROUP BY model ORDER BY sum(sell_cost) DESC, model`,
      [org.org_id],
    );
    const byUser = await db.query<{ external_user_id: string; requests: string; cost: string }>(
      `SELECT u.external_user_id, count(*)::text AS requests, sum(r.sell_cost)::text AS cost
         FROM usage_records r JOIN product_users u ON u.id = r.product_user_id
        WHERE r.org_id = $1 GROUP BY u.id, u.external_user_id
        ORDER BY sum(r.sell_cost) DESC, u.id`,
      [org.org_id],
    );
    const spentNano = numericToNano(ledger.sell);
    const overview = await viewer.get<Record<string, unknown>>(
      `/dashboard/api/orgs/${org.org_id}/overview`,
    );
    expect(overview.status).toBe(200);
    expect(overview.body).toEqual({
      org_id: org.org_id,
      currency: 'USD',
      period_start: period.start.toISOString(),
      period_end: period.end.toISOString(),
      spent_this_period: formatNano(spentNano),
      wallet_cost_this_period: formatNano(numericToNano(ledger.wallet)),
      requests_this_period: sends.length,
      tokens_this_period: {
        input: Number(ledger.input),
        output: Number(ledger.output),
        total: Number(ledger.input) + Number(ledger.output),
      },
      org_cap: {
        cap_rule_id: expect.stringMatching(/^cap_/),
        amount: '50.000000000000',
        remaining: formatNano(50_000_000_000n - spentNano),
      },
      wallet: {
        balance: formatNano(100_000_000_000n - numericToNano(ledger.wallet)),
        reserved: '0.000000000000',
        available: formatNano(100_000_000_000n - numericToNano(ledger.wallet)),
      },
      top_models: byModel.rows.map((row) => ({
        model: row.model,
        requests: Number(row.requests),
        total_tokens: expect.any(Number),
        cost: formatNano(numericToNano(row.cost)),
      })),
      top_product_users: byUser.rows.map((row) => ({
        product_end_user_id: expect.stringMatching(/^pu_/),
        app_id: org.app_id,
        external_user_id: row.external_user_id,
        display_name: '',
        requests: Number(row.requests),
        cost: formatNano(numericToNano(row.cost)),
      })),
      // the seeded app and its connection
      counts: { apps: 1, active_connections: 1, revoked_connections: 0 },
    });
    // The request without a product user ranks nobody.
    expect((overview.body.top_product_users as { external_user_id: string }[]).length).toBe(3);
  });
});
