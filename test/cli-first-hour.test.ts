// The admin CLI as a new user meets it: errors in the HTTP error shape, management commands
// that create the product user they name, and `seed --env` for the README's shell steps.
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { runCli, runCliJson, seed } from './support/processes.js';

const { env, db } = isolatedContext('clifirst');
const execFileAsync = promisify(execFile);

function stderrError(stderr: string): unknown {
  return JSON.parse(stderr.trim()) as unknown;
}

describe('CLI errors', () => {
  it('a refused command prints {"error":{"code","message"}} and exits 2', async () => {
    const missingFlag = await runCli(['wallet', 'show'], env);
    expect(missingFlag.code).toBe(2);
    expect(stderrError(missingFlag.stderr)).toEqual({
      error: { code: 'gw_invalid_request', message: '--org-id is required' },
    });
    const noWallet = await runCli(['wallet', 'show', '--org-id', 'org_nobody'], env);
    expect(noWallet.code).toBe(2);
    expect(stderrError(noWallet.stderr)).toEqual({
      error: { code: 'gw_not_found', message: 'no wallet for organization org_nobody' },
    });
    // A flag the action does not take is refused, before anything is read (decision 574).
    const keyed = await runCli(['wallet', 'show', '--org-id', 'o', '--idempotency-key', 'k'], env);
    expect(keyed.code).toBe(2);
    expect(stderrError(keyed.stderr)).toEqual({
      error: {
        code: 'gw_invalid_request',
        message:
          'gw wallet show takes no --idempotency-key: it changes nothing, so there is nothing to make once (the key is for topup and set)',
      },
    });
    const noApp = await runCli(
      ['product-user', 'block', '--app-id', 'app_nobody', '--external-user-id', 'u'],
      env,
    );
    expect(stderrError(noApp.stderr)).toEqual({
      error: { code: 'gw_invalid_app_id', message: 'no app app_nobody' },
    });
  });

  it('a mistyped flag is named with the one it is nearest to; a negative amount is said to lack its value (decision 467)', async () => {
    const typo = await runCli(['wallet', 'topup', '--org-id', 'org_x', '--ammount', '5'], env);
    expect(typo.code).toBe(2);
    expect(stderrError(typo.stderr)).toEqual({
      error: {
        code: 'gw_invalid_request',
        message:
          'unknown flag --ammount: did you mean --amount? (this command takes --org-id, --amount, --low-balance-threshold, --idempotency-key; see gw --help)',
      },
    });
    const negative = await runCli(['wallet', 'topup', '--org-id', 'org_x', '--amount', '-5'], env);
    expect(negative.code).toBe(2);
    expect(stderrError(negative.stderr)).toMatchObject({
      error: {
        code: 'gw_invalid_request',
        message: expect.stringMatching(/^--amount needs a value: /),
      },
    });
  });

  it('gw wallet topup refuses what the dashboard refuses, with the same codes, and records nothing', async () => {
    const org = await seed(env, ['--wallet', '1']);
    const rows = async () =>
      (
        await db.query<{ n: string }>(
          'SELECT count(*) AS n FROM wallet_transactions WHERE org_id = $1',
          [org.org_id],
        )
      ).rows[0]!.n;
    const before = await rows();
    for (const [amount, code] of [
      ['0', 'gw_invalid_request'],
      ['-1', 'gw_invalid_request'],
      ['1000000.000000001', 'gw_amount_out_of_range'],
      // The balance it would make is past the limit.
      ['999999.5', 'gw_amount_out_of_range'],
    ] as const) {
      const refused = await runCli(
        ['wallet', 'topup', '--org-id', org.org_id, '--amount', amount],
        env,
      );
      expect(refused.code, amount).toBe(2);
      expect((stderrError(refused.stderr) as { error: { code: string } }).error.code, amount).toBe(
        code,
      );
    }
    // The refusal names the flag typed, not the API field (decision 593), with a key or not.
    for (const key of [[], ['--idempotency-key', 'zero-topup']]) {
      const zero = await runCli(
        ['wallet', 'topup', '--org-id', org.org_id, '--amount', '0', ...key],
        env,
      );
      expect(zero.code, key.join(' ')).toBe(2);
      expect(stderrError(zero.stderr), key.join(' ')).toEqual({
        error: { code: 'gw_invalid_request', message: '--amount: must be greater than zero' },
      });
    }
    expect(await rows()).toBe(before);
    // A thousands separator gets the dashboard form's advice.
    const grouped = await runCli(
      ['wallet', 'topup', '--org-id', org.org_id, '--amount', '1,000'],
      env,
    );
    expect(stderrError(grouped.stderr)).toEqual({
      error: {
        code: 'gw_invalid_request',
        message:
          '--amount: must be digits with an optional decimal point, like 25 or 12.50 (no sign, thousands separators, spaces or currency; at most 12 decimals)',
      },
    });
    expect(await rows()).toBe(before);
  });

  it('names the flag an amount came in, says a currency is in capitals, refuses two outputs at once (decision 482)', async () => {
    // the refused seeds' organization, by a name no other test gives (files run at once)
    const name = `refused seed ${randomUUID()}`;
    const made = async () =>
      (await db.query('SELECT 1 FROM organizations WHERE name = $1', [name])).rowCount;
    const seeded = await runCli(['seed', '--name', name, '--wallet', '1e3'], env);
    expect(seeded.code).toBe(2);
    expect(stderrError(seeded.stderr)).toEqual({
      error: {
        code: 'gw_invalid_request',
        message:
          '--wallet: must be digits with an optional decimal point, like 25 or 12.50 (no sign, thousands separators, spaces or currency; at most 12 decimals)',
      },
    });
    expect(await made()).toBe(0);
    // both outputs at once: refused, not one of them dropped unseen
    const both = await runCli(['seed', '--name', name, '--json', '--env'], env);
    expect(both.code).toBe(2);
    expect(stderrError(both.stderr)).toEqual({
      error: { code: 'gw_invalid_request', message: '--json and --env: choose one' },
    });
    expect(await made()).toBe(0);
    const org = await seed(env);
    const target = ['--scope', 'org', '--org-id', org.org_id];
    for (const [flags, message] of [
      [
        ['--amount', '2000000'],
        ['gw_amount_out_of_range', '--amount: must be at most 1000000'],
      ],
      [
        ['--amount', '5', '--currency', 'usd'],
        ['gw_invalid_request', '--currency must be a 3-letter ISO code in capitals, such as USD'],
      ],
    ] as const) {
      const refused = await runCli(['cap', 'set', ...target, ...flags], env);
      expect(refused.code, flags.join(' ')).toBe(2);
      expect(stderrError(refused.stderr)).toEqual({
        error: { code: message[0], message: message[1] },
      });
    }
    const { rowCount } = await db.query('SELECT 1 FROM cap_rules WHERE org_id = $1', [org.org_id]);
    expect(rowCount).toBe(0);
  });

  it('names the flag a refused value came in, not the API field it becomes (decision 589)', async () => {
    const org = await seed(env);
    const user = ['--app-id', org.app_id, '--external-user-id', 'flag-named'];
    for (const [args, code, message] of [
      [
        ['credits', 'grant', ...user, '--amount', '0'],
        'gw_invalid_request',
        '--amount: must be greater than zero',
      ],
      [
        ['credits', 'grant', ...user, '--amount', '1', '--expires-at', '2001-01-01T00:00:00Z'],
        'gw_invalid_request',
        '--expires-at: must be in the future',
      ],
      [
        ['service-key', 'create', '--org-id', org.org_id, '--scopes', 'everything'],
        'gw_invalid_request',
        '--scopes: unknown scopes everything (known: product_users:read, product_users:write)',
      ],
    ] as const) {
      const refused = await runCli([...args], env);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(stderrError(refused.stderr), args.join(' ')).toEqual({ error: { code, message } });
    }
  });

  it('gw webhook add without CREDENTIALS_MASTER_KEY says this command needs it, and adds nothing', async () => {
    const org = await seed(env);
    const { CREDENTIALS_MASTER_KEY: _unset, ...withoutKey } = env;
    const refused = await runCli(
      ['webhook', 'add', '--org-id', org.org_id, '--url', 'https://example.com/hooks'],
      withoutKey,
    );
    expect(refused.code).toBe(2);
    expect(stderrError(refused.stderr)).toEqual({
      error: {
        code: 'gw_unavailable',
        message:
          'webhook signing secrets are encrypted with CREDENTIALS_MASTER_KEY, which is not set here (the gateway and the gw CLI each need it)',
      },
    });
    const { rows } = await db.query('SELECT 1 FROM webhook_endpoints WHERE org_id = $1', [
      org.org_id,
    ]);
    expect(rows).toEqual([]);
  });

  it('a bad environment variable is gw_invalid_config', async () => {
    const result = await runCli(['wallet', 'show', '--org-id', 'o'], { ...env, PORT: 'abc' });
    expect(result.code).toBe(2);
    expect(stderrError(result.stderr)).toMatchObject({ error: { code: 'gw_invalid_config' } });
  });
});

describe('gw migrate', () => {
  it('makes a new database and applies every migration once, needing no Redis', async () => {
    const name = `gw_test_migrate_${process.pid}_${Date.now()}`;
    const url = new URL(env.DATABASE_URL!);
    url.pathname = `/${name}`;
    // An unreachable Redis: the command must not need one (an init container before Redis).
    const migrateEnv = { ...env, DATABASE_URL: url.href, REDIS_URL: 'redis://127.0.0.1:1' };
    const admin = new pg.Client({ connectionString: env.DATABASE_URL });
    await admin.connect();
    try {
      const first = await runCliJson<{ applied: string[] }>(['migrate'], migrateEnv);
      const files = readdirSync('src/db/migrations')
        .filter((file) => file.endsWith('.sql'))
        .sort();
      expect(first.applied).toEqual(files);
      expect(await runCliJson<{ applied: string[] }>(['migrate'], migrateEnv)).toEqual({
        applied: [],
      });
      const extra = await runCli(['migrate', '--now'], migrateEnv);
      expect(extra.code).toBe(2);
      expect(stderrError(extra.stderr)).toMatchObject({ error: { code: 'gw_invalid_request' } });
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });
});

describe('management commands create the product user they name', () => {
  it('blocks a user before their first request, and --help says so', async () => {
    const org = await seed(env);
    const blocked = await runCliJson<{ product_end_user_id: string; status: string }>(
      ['product-user', 'block', '--app-id', org.app_id, '--external-user-id', 'never-seen'],
      env,
    );
    expect(blocked.status).toBe('blocked');
    const { rows } = await db.query<{ id: string; status: string }>(
      'SELECT id, status FROM product_users WHERE app_id = $1 AND external_user_id = $2',
      [org.app_id, 'never-seen'],
    );
    expect(rows).toEqual([{ id: blocked.product_end_user_id, status: 'blocked' }]);

    const help = await runCli(['--help'], env);
    expect(help.stdout).toContain(
      'Creates the product user if it does not exist yet (block someone before their first request).',
    );
  });
});

describe('gw seed --env', () => {
  it('prints shell exports that eval sets', async () => {
    const result = await runCli(['seed', '--env'], env);
    expect(result.code).toBe(0);
    const { stdout } = await execFileAsync(
      'bash',
      [
        '-c',
        `eval "$SEED"; printf '%s\\n' "$ORG_ID" "$APP_ID" "$CONNECTION_ID" "$API_KEY" "$SERVICE_KEY"`,
      ],
      { env: { ...process.env, SEED: result.stdout } },
    );
    const [orgId, appId, connectionId, apiKey, serviceKey] = stdout.trim().split('\n');
    expect(orgId).toMatch(/^org_/);
    expect(appId).toMatch(/^app_/);
    expect(connectionId).toMatch(/^conn_/);
    expect(apiKey).toMatch(/^gw_(?!svc_)/);
    expect(serviceKey).toMatch(/^gw_svc_/);
    const { rows } = await db.query('SELECT 1 FROM apps WHERE id = $1 AND org_id = $2', [
      appId,
      orgId,
    ]);
    expect(rows).toHaveLength(1);
  });
});
