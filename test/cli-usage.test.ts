// `gw usage show` (decision 487): what it prints is what the dashboard API's usage route answers
// for the same organization, grouping and range, and it refuses what the route refuses, with the
// same code and the flag named. Real gateway, Redis and Postgres; the CLI in-process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDbPool } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import { isolatedContext } from './support/context.js';
import { createMember, signInTo, uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { TEST_DATABASE_URL } from './support/env.js';
import type { ErrorBody } from './support/http.js';
import { runCli, seed, startGateway, type GatewayProcess } from './support/processes.js';
import { usageRecord } from './support/records.js';

const { env, db } = isolatedContext('cliusage');
const sinkDb = createDbPool(TEST_DATABASE_URL, 2);
let gateway: GatewayProcess;
let orgId: string;
let viewer: DashboardClient;
let appId: string;
/** A product user on record (pu_cli_usage_b is not: its row is named null). */
const userA = `pu_cli_usage_a_${Date.now().toString(36)}`;

const at = (day: string): Date => new Date(`${day}T12:00:00Z`);

beforeAll(async () => {
  gateway = await startGateway(env);
  const org = await seed(env);
  orgId = org.org_id;
  const email = uniqueEmail('cli-usage');
  await createMember(env, email, orgId, 'viewer');
  viewer = await signInTo(gateway, email);
  appId = org.app_id;
  await db.query(
    `INSERT INTO product_users (id, org_id, app_id, external_user_id) VALUES ($1, $2, $3, 'cli-user-a')`,
    [userA, orgId, appId],
  );
  // Days, models, connections and product users that differ, costs that are not round, and a
  // row before every range asked for.
  await new PostgresUsageSink(sinkDb).write([
    usageRecord(orgId, 1_234_567_891n, {
      createdAt: at('2026-03-02'),
      model: 'vendor_a/claude-x',
      appConnectionId: org.app_connection_id,
      productUserId: userA,
      walletCostNano: 7n,
      cacheWriteTokens: 6,
      cacheWrite1hTokens: 2,
      cacheReadTokens: 3,
      webSearchRequests: 2,
    }),
    usageRecord(orgId, 3n, {
      createdAt: at('2026-03-02'),
      appConnectionId: 'conn_cli_usage_other',
      inputTokens: 1000,
      cacheReadTokens: 900,
    }),
    usageRecord(orgId, 500_000_000n, {
      createdAt: at('2026-03-05'),
      model: 'vendor_a/claude-x',
      productUserId: 'pu_cli_usage_b',
    }),
    usageRecord(orgId, 999_999_999_999n, { createdAt: at('2026-02-20') }),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
  await sinkDb.end();
});

/** The command's JSON output; it must have succeeded, saying nothing on stderr. */
async function shown(flags: string[]): Promise<unknown> {
  const result = await runCli(['usage', 'show', '--org-id', orgId, ...flags], env);
  expect(result.stderr, flags.join(' ')).toBe('');
  expect(result.code, flags.join(' ')).toBe(0);
  return JSON.parse(result.stdout) as unknown;
}

describe('gw usage show', () => {
  it('prints what GET /dashboard/api/orgs/{org_id}/usage answers, for every grouping and range', async () => {
    const asked: Array<Record<string, string>> = [
      { from: '2026-03-01', to: '2026-03-08' },
      ...['day', 'model', 'connection', 'product_user'].map((group) => ({
        group_by: group,
        from: '2026-03-02',
        to: '2026-03-06',
      })),
      // a whole month of product users (their monthly rollup), the top spender only
      { group_by: 'product_user', from: '2026-03-01', to: '2026-04-01', limit: '1' },
      { group_by: 'model', from: '2026-03-01T00:00:00Z', to: '2026-03-03' },
    ];
    for (const query of asked) {
      const flags = Object.entries(query).flatMap(([name, value]) => [
        `--${name.replace('_', '-')}`,
        value,
      ]);
      const api = await viewer.get(
        `/dashboard/api/orgs/${orgId}/usage?${new URLSearchParams(query).toString()}`,
      );
      expect(api.status, JSON.stringify(query)).toBe(200);
      expect(await shown(flags), JSON.stringify(query)).toEqual(api.body);
    }
    // The answers compared hold the usage written, to the nano-unit, and not the row before.
    expect(
      await shown(['--group-by', 'model', '--from', '2026-03-01', '--to', '2026-04-01']),
    ).toEqual({
      group_by: 'model',
      from: '2026-03-01',
      to: '2026-04-01',
      data: [
        expect.objectContaining({
          key: 'vendor_a/claude-x',
          requests: 2,
          cache_write_tokens: 6,
          cache_write_1h_tokens: 2,
          cache_read_tokens: 3,
          web_search_requests: 2,
          cost: '1.734567891000',
          wallet_cost: '0.000000007000',
        }),
        expect.objectContaining({
          key: 'vendor_b/gpt-4o-mini',
          requests: 1,
          input_tokens: 1000,
          cache_read_tokens: 900,
          cost: '0.000000003000',
        }),
      ],
    });
    expect(
      await shown(['--group-by', 'product_user', '--from', '2026-03-01', '--to', '2026-04-01']),
    ).toMatchObject({
      data: [
        { key: userA, external_user_id: 'cli-user-a', app_id: appId },
        { key: 'pu_cli_usage_b', external_user_id: null, app_id: null },
        { key: null, external_user_id: null, app_id: null },
      ],
    });
  });

  it('refuses what the route refuses, with its code and the flag named, exit 2, and prints nothing', async () => {
    const auditRows = async () =>
      (
        await db.query<{ rows: number }>(
          'SELECT count(*)::int AS rows FROM dashboard_audit_log WHERE org_id = $1',
          [orgId],
        )
      ).rows[0]!.rows;
    const auditBefore = await auditRows();
    // [flags, the CLI's message, the route's query and its message]
    const cases: Array<[string[], string, string, string]> = [
      [
        ['--from', '2026-02-30', '--to', '2026-03-05'],
        '--from: 2026-02-30 is not a calendar date',
        'from=2026-02-30&to=2026-03-05',
        'from: 2026-02-30 is not a calendar date',
      ],
      [
        ['--from', 'yesterday'],
        '--from: must be a date (YYYY-MM-DD) or an RFC 3339 timestamp',
        'from=yesterday',
        'from: must be a date (YYYY-MM-DD) or an RFC 3339 timestamp',
      ],
      [
        ['--from', '2026-03-05', '--to', '2026-03-01'],
        '--from: must be before --to',
        'from=2026-03-05&to=2026-03-01',
        'from: must be before to',
      ],
      [
        ['--from', '2025-01-01', '--to', '2026-03-05'],
        '--to: the range may span at most 366 days',
        'from=2025-01-01&to=2026-03-05',
        'to: the range may span at most 366 days',
      ],
      [
        ['--group-by', 'week'],
        '--group-by: must be one of day, model, connection, product_user',
        'group_by=week',
        'group_by: must be one of day, model, connection, product_user',
      ],
      [['--limit', '0'], '--limit: must be at least 1', 'limit=0', 'limit: must be at least 1'],
    ];
    for (const [flags, message, query, routeMessage] of cases) {
      const result = await runCli(['usage', 'show', '--org-id', orgId, ...flags], env);
      expect(result.code, flags.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(JSON.parse(result.stderr)).toEqual({ error: { code: 'gw_invalid_request', message } });
      const api = await viewer.get<ErrorBody>(`/dashboard/api/orgs/${orgId}/usage?${query}`);
      expect(api.status, query).toBe(400);
      expect(api.body.error).toEqual({ code: 'gw_invalid_request', message: routeMessage });
    }

    const unknownOrg = await runCli(['usage', 'show', '--org-id', 'org_cli_usage_nobody'], env);
    expect(unknownOrg).toEqual({
      code: 2,
      stdout: '',
      stderr: `${JSON.stringify({
        error: { code: 'gw_not_found', message: 'no organization org_cli_usage_nobody' },
      })}\n`,
    });
    const typo = await runCli(['usage', 'show', '--org-id', orgId, '--group', 'day'], env);
    expect(typo.code).toBe(2);
    expect(JSON.parse(typo.stderr)).toEqual({
      error: {
        code: 'gw_invalid_request',
        message:
          'unknown flag --group: did you mean --group-by? (this command takes --org-id, --from, --to, --group-by, --limit; see gw --help)',
      },
    });
    const noOrg = await runCli(['usage', 'show', '--group-by', 'day'], env);
    expect(JSON.parse(noOrg.stderr)).toEqual({
      error: { code: 'gw_invalid_request', message: '--org-id is required' },
    });
    expect(await auditRows()).toBe(auditBefore);
  });
});
