// The README's dashboard path with the CLI: the first dashboard user made a member of the
// seeded organization, an existing user added to one (gw admin add-member), and every CLI
// write that changes an organization audited as its dashboard equivalent is, by the operator.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInTo, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { isolatedContext } from './support/context.js';
import {
  runCli,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
} from './support/processes.js';

const { env, db } = isolatedContext('cliaudit');
let gateway: GatewayProcess;

beforeAll(async () => {
  gateway = await startGateway(env);
});
afterAll(async () => {
  await gateway.stop();
});

interface AuditRow {
  user_id: string;
  action: string;
  object_type: string;
  object_id: string;
  details: Record<string, unknown>;
}

/** The org's audit entries after its seeding (`gw seed` tops its wallet up: an entry of its own). */
async function auditRows(orgId: string): Promise<AuditRow[]> {
  const { rows } = await db.query<AuditRow>(
    `SELECT user_id, action, object_type, object_id, details FROM dashboard_audit_log
      WHERE org_id = $1 ORDER BY id`,
    [orgId],
  );
  const [first, ...rest] = rows;
  expect(first).toMatchObject({ user_id: 'cli', action: 'wallet.topup' });
  return rest;
}

const errorOf = (stderr: string): { code: string; message: string } =>
  (JSON.parse(stderr) as { error: { code: string; message: string } }).error;

describe('gw admin: dashboard users and the seeded organization', () => {
  it('the startup line says where the dashboard is', () => {
    expect(gateway.output()).toMatch(
      new RegExp(
        `"dashboard":"http://127\\.0\\.0\\.1:${gateway.port}/dashboard/"[^\\n]*"msg":"gw listening"`,
      ),
    );
  });

  it('create-user --org-id makes an owner of the seeded org, audited as the operator; the org is in their list', async () => {
    const org = await seed(env);
    const email = uniqueEmail('readme');
    const created = await runCliJson<{ id: string; org_ids: string[] }>(
      [
        ...['admin', 'create-user', '--email', email, '--password-stdin'],
        ...['--org-id', org.org_id, '--role', 'owner'],
      ],
      env,
      { stdin: TEST_PASSWORD },
    );
    expect(created.org_ids).toContain(org.org_id);
    expect(await auditRows(org.org_id)).toEqual([
      {
        user_id: 'cli',
        action: 'member.add',
        object_type: 'member',
        object_id: created.id,
        details: { role: 'owner' },
      },
    ]);
    const client = await signInTo(gateway, email);
    const orgs = await client.get<{ data: { id: string; role: string }[] }>('/dashboard/api/orgs');
    expect(orgs.body.data).toContainEqual(
      expect.objectContaining({ id: org.org_id, role: 'owner' }),
    );
  });

  it('an existing user is added with add-member (password untouched); create-user on their e-mail points there', async () => {
    const org = await seed(env);
    const email = uniqueEmail('existing');
    const created = await runCliJson<{ id: string }>(
      ['admin', 'create-user', '--email', email, '--password-stdin'],
      env,
      { stdin: TEST_PASSWORD },
    );
    const hashBefore = (
      await db.query<{ password_hash: string }>(
        'SELECT password_hash FROM dashboard_users WHERE id = $1',
        [created.id],
      )
    ).rows[0]!.password_hash;

    const again = await runCli(
      [
        ...['admin', 'create-user', '--email', email, '--password-stdin'],
        ...['--org-id', org.org_id, '--role', 'owner'],
      ],
      env,
      { stdin: 'another long passphrase\n' },
    );
    expect(again.code).toBe(2);
    expect(errorOf(again.stderr)).toEqual({
      code: 'gw_conflict',
      message:
        'email: a user with this e-mail exists (to add that user to an organization: gw admin add-member --email E --org-id ORG --role R)',
    });

    const added = await runCliJson<Record<string, unknown>>(
      [
        'admin',
        'add-member',
        '--email',
        email.toUpperCase(),
        '--org-id',
        org.org_id,
        '--role',
        'owner',
      ],
      env,
    );
    expect(added).toEqual({
      user_id: created.id,
      email,
      role: 'owner',
      personal_organization: false,
      created_at: expect.any(String),
    });
    const hashAfter = (
      await db.query<{ password_hash: string }>(
        'SELECT password_hash FROM dashboard_users WHERE id = $1',
        [created.id],
      )
    ).rows[0]!.password_hash;
    expect(hashAfter).toBe(hashBefore);
    expect(await auditRows(org.org_id)).toEqual([
      {
        user_id: 'cli',
        action: 'member.add',
        object_type: 'member',
        object_id: created.id,
        details: { role: 'owner' },
      },
    ]);
    const client = await signInTo(gateway, email);
    const overview = await client.get(`/dashboard/api/orgs/${org.org_id}/overview`);
    expect(overview.status).toBe(200);

    const twice = await runCli(
      ['admin', 'add-member', '--email', email, '--org-id', org.org_id],
      env,
    );
    expect(twice.code).toBe(2);
    expect(errorOf(twice.stderr)).toEqual({
      code: 'gw_conflict',
      message: 'this user is already a member',
    });
    const nobody = await runCli(
      ['admin', 'add-member', '--email', uniqueEmail('nobody'), '--org-id', org.org_id],
      env,
    );
    expect(errorOf(nobody.stderr)).toEqual({
      code: 'gw_not_found',
      message: 'no dashboard user with this e-mail (create one with gw admin create-user)',
    });
    const noOrg = await runCli(
      ['admin', 'add-member', '--email', email, '--org-id', 'org_nope'],
      env,
    );
    expect(errorOf(noOrg.stderr)).toEqual({
      code: 'gw_not_found',
      message: 'no organization org_nope',
    });
    expect(await auditRows(org.org_id)).toHaveLength(1);
  });
});

describe('CLI writes to product users are audited as the dashboard audits them', () => {
  it('product-user block/unblock and credits grant/revoke each leave an entry by the operator', async () => {
    const org = await seed(env);
    const user = ['--app-id', org.app_id, '--external-user-id', 'customer-7'];
    const blocked = await runCliJson<{ product_end_user_id: string }>(
      ['product-user', 'block', ...user],
      env,
    );
    await runCliJson(['product-user', 'unblock', ...user], env);
    const grant = await runCliJson<{ grant_id: string }>(
      ['credits', 'grant', ...user, '--amount', '2.25', '--reason', 'support'],
      env,
    );
    const expiring = await runCliJson<{ grant_id: string }>(
      ['credits', 'grant', ...user, '--amount', '1', '--expires-at', '2099-01-01T00:00:00+02:00'],
      env,
    );
    await runCliJson(['credits', 'revoke', '--grant-id', grant.grant_id], env);
    // Revoking it again, or a grant that does not exist, changes nothing and audits nothing.
    // (As the dashboard answers: 409 gw_conflict revoked already, decision 588.)
    for (const [grantId, error] of [
      [grant.grant_id, { code: 'gw_conflict', message: 'this credit grant is already revoked' }],
      [
        'grant_doesnotexist0000',
        { code: 'gw_not_found', message: 'no credit grant grant_doesnotexist0000' },
      ],
    ] as const) {
      const refused = await runCli(['credits', 'revoke', '--grant-id', grantId], env);
      expect(refused.code).toBe(2);
      expect(errorOf(refused.stderr)).toEqual(error);
    }

    const userId = blocked.product_end_user_id;
    expect(await auditRows(org.org_id)).toEqual([
      {
        user_id: 'cli',
        action: 'product_user.block',
        object_type: 'product_user',
        object_id: userId,
        details: {},
      },
      {
        user_id: 'cli',
        action: 'product_user.unblock',
        object_type: 'product_user',
        object_id: userId,
        details: {},
      },
      {
        user_id: 'cli',
        action: 'credit_grant.create',
        object_type: 'credit_grant',
        object_id: grant.grant_id,
        details: {
          product_end_user_id: userId,
          amount: '2.25',
          currency: 'USD',
          expires_at: null,
          reason: 'support',
        },
      },
      {
        user_id: 'cli',
        action: 'credit_grant.create',
        object_type: 'credit_grant',
        object_id: expiring.grant_id,
        // The amount as typed; the expiry as the instant the CLI read.
        details: {
          product_end_user_id: userId,
          amount: '1',
          currency: 'USD',
          expires_at: '2098-12-31T22:00:00.000Z',
          reason: null,
        },
      },
      {
        user_id: 'cli',
        action: 'credit_grant.revoke',
        object_type: 'credit_grant',
        object_id: grant.grant_id,
        details: {},
      },
    ]);
  });
});
