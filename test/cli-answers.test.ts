// What the CLI prints is what the dashboard API answers for the same object, by the same field
// names (decision 398): each command's output is read with the API route's own response
// schema, strict, so a field of the CLI's own (the raw key once printed as `api_key` or
// `service_key` where the API says `key`) or one the API has and the CLI left out fails; every
// list command prints the API's page, `{"data": [...], "next_cursor": null}`.
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  apiKeySchema,
  createdApiKeySchema,
  issuedApiKeySchema,
} from '../src/routes/dashboard/api-keys/answers.js';
import {
  credentialSchema,
  writtenCredentialSchema,
} from '../src/routes/dashboard/credentials/answers.js';
import {
  createdOAuthClientSchema,
  oauthClientSchema,
  rotatedOAuthClientSchema,
} from '../src/routes/dashboard/oauth-clients/answers.js';
import { capSetSchema, capStateSchema } from '../src/routes/dashboard/caps/answers.js';
import { creditGrantWithCreditsSchema } from '../src/routes/dashboard/credit-grants/schema.js';
import { dashboardUserSchema, pageOf } from '../src/routes/dashboard/answers.js';
import {
  issuedServiceKeySchema,
  serviceKeySchema,
} from '../src/routes/dashboard/service-keys/answers.js';
import { walletSchema } from '../src/routes/dashboard/wallet/answers.js';
import { walletAlertSchema } from '../src/routes/dashboard/answers.js';
import { memberSchema } from '../src/routes/dashboard/members/answers.js';
import { logoutEverywhereRoute } from '../src/routes/auth/logout-everywhere.js';
import { passwordResetConfirmRoute } from '../src/routes/auth/password-reset-confirm.js';
import {
  webhookSchema,
  webhookWithSecretSchema,
} from '../src/routes/dashboard/webhooks/answers.js';
import { usageRoute } from '../src/routes/dashboard/usage.js';
import { createDbPool } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import { productUserSchema } from '../src/routes/answers.js';
import { isolatedContext } from './support/context.js';
import { TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { TEST_DATABASE_URL } from './support/env.js';
import { runCli, seed, type SeededOrg } from './support/processes.js';
import { usageRecord } from './support/records.js';

const { env } = isolatedContext('cliansw');
let org: SeededOrg;

beforeAll(async () => {
  org = await seed(env);
});

/** The command's output, which must read as `schema` with no field besides its own. */
async function printedAs<Schema extends z.ZodObject>(
  schema: Schema,
  args: string[],
  stdin?: string,
): Promise<z.infer<Schema>> {
  const result = await runCli(args, env, stdin === undefined ? {} : { stdin });
  expect(result.stderr, args.join(' ')).toBe('');
  expect(result.code, args.join(' ')).toBe(0);
  return schema.strict().parse(JSON.parse(result.stdout)) as z.infer<Schema>;
}

/** The API's page of `row`, each row with no field besides its own. */
const strictPage = (row: z.ZodObject) => pageOf(row.strict());

describe('the CLI prints the dashboard API’s objects', () => {
  it('gw api-key create|update|rotate|revoke: the API key, its raw value in key', async () => {
    const connection = ['--app-connection-id', org.app_connection_id];
    const created = await printedAs(createdApiKeySchema, [
      ...['api-key', 'create', ...connection, '--name', 'cli answers'],
      ...['--requests-per-minute', '600'],
    ]);
    expect(created).toMatchObject({
      app_connection_id: org.app_connection_id,
      name: 'cli answers',
      status: 'active',
      requests_per_minute: 600,
      product_user_requests_per_minute: null,
      warnings: [],
    });
    expect(created.key).toMatch(/^gw_/);

    const updated = await printedAs(apiKeySchema, [
      ...['api-key', 'update', '--id', created.id, '--requests-per-minute', 'none'],
    ]);
    expect(updated).toMatchObject({ id: created.id, requests_per_minute: null });

    const rotated = await printedAs(
      issuedApiKeySchema.extend({ replaces: z.string(), old_key_expires_at: z.string() }),
      ['api-key', 'rotate', '--id', created.id],
    );
    expect(rotated.replaces).toBe(created.id);
    expect(rotated.id).not.toBe(created.id);
    expect(rotated.key).not.toBe(created.key);

    const revoked = await printedAs(apiKeySchema, ['api-key', 'revoke', '--id', rotated.id]);
    expect(revoked).toMatchObject({ id: rotated.id, status: 'revoked' });
    const missing = await runCli(['api-key', 'revoke', '--id', 'key_nobody'], env);
    expect(missing.code).toBe(2);
    expect(JSON.parse(missing.stderr)).toEqual({
      error: { code: 'gw_not_found', message: 'no API key key_nobody' },
    });
  });

  it('gw service-key create|disable|revoke: the service key, its raw value in key', async () => {
    const created = await printedAs(issuedServiceKeySchema, [
      ...['service-key', 'create', '--org-id', org.org_id, '--scopes', 'product_users:read'],
    ]);
    expect(created).toMatchObject({
      org_id: org.org_id,
      scopes: ['product_users:read'],
      status: 'active',
    });
    expect(created.key).toMatch(/^gw_svc_/);
    for (const [action, status] of [
      ['disable', 'disabled'],
      ['revoke', 'revoked'],
    ] as const) {
      const changed = await printedAs(serviceKeySchema, [
        'service-key',
        action,
        '--id',
        created.id,
      ]);
      expect(changed).toMatchObject({ id: created.id, status });
    }
  });

  it('gw oauth-client create|list|rotate-secret|delete: the OAuth client', async () => {
    const created = await printedAs(createdOAuthClientSchema, [
      ...['oauth-client', 'create', '--app-id', org.app_id, '--name', 'CLI answers'],
      ...['--redirect-uri', 'https://app.example.com/cb'],
    ]);
    expect(created).toMatchObject({
      app_id: org.app_id,
      name: 'CLI answers',
      public: false,
      redirect_uris: ['https://app.example.com/cb'],
      status: 'active',
    });
    expect(created.client_secret).toMatch(/^gw_client_secret_/);

    const listed = await printedAs(strictPage(oauthClientSchema), [
      ...['oauth-client', 'list', '--app-id', org.app_id],
    ]);
    expect(listed.next_cursor).toBeNull();
    expect(listed.data.map((client) => client.client_id)).toContain(created.client_id);

    const rotated = await printedAs(rotatedOAuthClientSchema, [
      ...['oauth-client', 'rotate-secret', '--client-id', created.client_id],
    ]);
    expect(rotated.client_secret).not.toBe(created.client_secret);
    expect(rotated.retired_secrets_expire_at).toHaveLength(1);

    const deleted = await printedAs(oauthClientSchema, [
      ...['oauth-client', 'delete', '--client-id', created.client_id],
    ]);
    expect(deleted).toMatchObject({ client_id: created.client_id, status: 'deleted' });
  });

  it('gw webhook add|list|rotate-secret: the endpoint, its signing secret in secret', async () => {
    const added = await printedAs(webhookWithSecretSchema, [
      ...['webhook', 'add', '--org-id', org.org_id, '--url', 'https://example.com/cli-answers'],
      ...['--events', 'wallet.low_balance'],
    ]);
    expect(added).toMatchObject({
      org_id: org.org_id,
      url: 'https://example.com/cli-answers',
      event_types: ['wallet.low_balance'],
      status: 'enabled',
    });
    expect(added.secret).toMatch(/^whsec_/);

    const listed = await printedAs(strictPage(webhookSchema), [
      ...['webhook', 'list', '--org-id', org.org_id],
    ]);
    expect(listed.next_cursor).toBeNull();
    expect(listed.data.map((endpoint) => endpoint.id)).toEqual([added.id]);

    const rotated = await printedAs(webhookWithSecretSchema, [
      ...['webhook', 'rotate-secret', '--id', added.id],
    ]);
    expect(rotated.id).toBe(added.id);
    expect(rotated.secret).not.toBe(added.secret);
    expect(rotated.previous_secret_expires_at).not.toBeNull();
  });

  it('gw credentials add|list: the provider credential, its fingerprint', async () => {
    const added = await printedAs(
      writtenCredentialSchema,
      [
        ...['credentials', 'add', '--org-id', org.org_id, '--provider', 'vendor_b'],
        ...['--name', 'cli answers', '--secret-stdin'],
      ],
      'mock-good-cli-answers-key\n',
    );
    const listed = await printedAs(strictPage(credentialSchema), [
      ...['credentials', 'list', '--org-id', org.org_id],
    ]);
    expect(listed.next_cursor).toBeNull();
    expect(listed.data.map((credential) => credential.id)).toEqual([added.id]);
    expect(JSON.stringify(listed)).not.toContain('mock-good-cli-answers-key');
  });

  it('gw admin create-user: the dashboard user (id, email_verified), with the organizations it is in', async () => {
    const email = uniqueEmail('cli-answers');
    const created = await printedAs(
      dashboardUserSchema.extend({ org_ids: z.array(z.string()) }),
      [
        ...['admin', 'create-user', '--email', email, '--password-stdin'],
        ...['--org-id', org.org_id, '--role', 'viewer'],
      ],
      `${TEST_PASSWORD}\n`,
    );
    expect(created).toEqual({
      id: expect.stringMatching(/^usr_/),
      email,
      personal_org_id: expect.stringMatching(/^org_/),
      // the operator's accounts are taken as verified
      email_verified: true,
      org_ids: [created.personal_org_id, org.org_id],
    });
  });

  it('gw admin add-member|set-password|end-sessions: the member; a reset’s and a sign-out’s answers', async () => {
    const email = uniqueEmail('cli-answers-member');
    await printedAs(
      dashboardUserSchema.extend({ org_ids: z.array(z.string()) }),
      ['admin', 'create-user', '--email', email, '--password-stdin'],
      `${TEST_PASSWORD}\n`,
    );
    const added = await printedAs(memberSchema, [
      ...['admin', 'add-member', '--email', email, '--org-id', org.org_id, '--role', 'admin'],
    ]);
    expect(added).toEqual({
      user_id: expect.stringMatching(/^usr_/),
      email,
      role: 'admin',
      personal_organization: false,
      created_at: expect.any(String),
    });
    // The routes that answer the same change: a reset by e-mail, signing out everywhere.
    const reset = await printedAs(
      passwordResetConfirmRoute.responses[200]!.schema as z.ZodObject,
      ['admin', 'set-password', '--email', email, '--password-stdin'],
      `${TEST_PASSWORD}!\n`,
    );
    expect(reset).toEqual({ password_reset: true, email, sessions_ended: 0 });
    const ended = await printedAs(logoutEverywhereRoute.responses[200]!.schema as z.ZodObject, [
      ...['admin', 'end-sessions', '--email', email],
    ]);
    expect(ended).toEqual({ signed_out: true, sessions_ended: 0 });
  });

  it('gw product-user block|unblock: the product user’s profile', async () => {
    const user = ['--app-id', org.app_id, '--external-user-id', 'cli-answers-blocked'];
    const blocked = await printedAs(productUserSchema, ['product-user', 'block', ...user]);
    expect(blocked).toMatchObject({
      org_id: org.org_id,
      app_id: org.app_id,
      external_user_id: 'cli-answers-blocked',
      status: 'blocked',
      credits: { available_credits: '0.000000000000' },
    });
    const unblocked = await printedAs(productUserSchema, ['product-user', 'unblock', ...user]);
    expect(unblocked.product_end_user_id).toBe(blocked.product_end_user_id);
    expect(unblocked.status).toBe('active');
  });

  it('gw credits grant|revoke: the grant, with the user’s credits after the change', async () => {
    const granted = await printedAs(creditGrantWithCreditsSchema, [
      ...['credits', 'grant', '--app-id', org.app_id, '--external-user-id', 'cli-answers-credits'],
      ...['--amount', '1.50'],
    ]);
    expect(granted).toMatchObject({
      amount: '1.500000000000',
      status: 'active',
      credits: { available_credits: '1.500000000000', active_grant_count: 1 },
    });
    const revoked = await printedAs(creditGrantWithCreditsSchema, [
      ...['credits', 'revoke', '--grant-id', granted.grant_id],
    ]);
    expect(revoked).toMatchObject({
      grant_id: granted.grant_id,
      status: 'revoked',
      credits: { available_credits: '0.000000000000', active_grant_count: 0 },
    });
    // Revoked again: the dashboard's answer (409 gw_conflict there), not "no active grant".
    const again = await runCli(['credits', 'revoke', '--grant-id', granted.grant_id], env);
    expect(again.code).toBe(2);
    expect(JSON.parse(again.stderr)).toEqual({
      error: { code: 'gw_conflict', message: 'this credit grant is already revoked' },
    });
    const unknown = await runCli(['credits', 'revoke', '--grant-id', 'grant_nonesuch'], env);
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stderr)).toEqual({
      error: { code: 'gw_not_found', message: 'no credit grant grant_nonesuch' },
    });
  });

  it('gw wallet show and gw cap set|show|clear: the wallet, the cap state', async () => {
    const wallet = await printedAs(walletSchema, ['wallet', 'show', '--org-id', org.org_id]);
    expect(wallet.org_id).toBe(org.org_id);
    const target = ['--scope', 'org', '--org-id', org.org_id];
    const set = await printedAs(capSetSchema, ['cap', 'set', ...target, '--amount', '10.00']);
    expect(set.cap?.amount).toBe('10.000000000000');
    await printedAs(capStateSchema, ['cap', 'show', ...target]);
    const cleared = await printedAs(capStateSchema, ['cap', 'clear', ...target]);
    expect(cleared.cap).toBeNull();
  });

  it('gw wallet alert: the wallet alert', async () => {
    const alert = ['wallet', 'alert', '--org-id', org.org_id, '--low-balance-threshold'];
    const set = await printedAs(walletAlertSchema, [...alert, '5.00']);
    expect(set).toEqual({
      org_id: org.org_id,
      low_balance_threshold: '5.000000000000',
      currency: 'USD',
    });
    const removed = await printedAs(walletAlertSchema, [...alert, 'none']);
    expect(removed).toEqual({ org_id: org.org_id, low_balance_threshold: null, currency: 'USD' });
  });

  it('gw usage show: the usage summary, each row with no field besides its own', async () => {
    const sinkDb = createDbPool(TEST_DATABASE_URL, 1);
    try {
      await new PostgresUsageSink(sinkDb).write([usageRecord(org.org_id, 5n)]);
    } finally {
      await sinkDb.end();
    }
    const summary = usageRoute.responses[200]!.schema as z.ZodObject<{
      data: z.ZodArray<z.ZodObject>;
    }>;
    const usage = await printedAs(
      summary.extend({ data: z.array(summary.shape.data.element.strict()) }),
      ['usage', 'show', '--org-id', org.org_id, '--group-by', 'model'],
    );
    expect(usage.data).toEqual([
      expect.objectContaining({ key: 'vendor_b/gpt-4o-mini', requests: 1, cost: '0.000000005000' }),
    ]);
  });
});
