// Idempotency-Key on the dashboard's create routes (decision 372), through started gateways on
// the real Redis and Postgres: a request sent again with its key answers the first answer (same
// id, same secret, `Idempotent-Replayed: true`) and creates nothing more; a wallet top-up sent
// twice, or many times at once, adds its money once; the key with another body is refused; keys
// are an organization's own; a bad key is refused before anything is made; a refused request
// leaves its key free; secrets are kept sealed, never in the clear (and not kept at all where
// there is no master key); /openapi.json documents the header.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteExpiredIdempotencyKeys } from '../src/idempotency/store.js';
import { isolatedContext } from './support/context.js';
import {
  createMember,
  signInTo,
  uniqueEmail,
  type DashboardClient,
  newIdempotencyKey,
  withIdempotencyKey,
} from './support/dashboard.js';
import { encodeRequest, exchange, type Outcome } from './support/fuzz/raw-http.js';
import { getJson, type ErrorBody } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('dash-idem');
/** Dashboard top-ups on. */
let gateway: GatewayProcess;
/** Top-ups off (the default): a top-up there is refused before it does anything. */
let locked: GatewayProcess;
/** No CREDENTIALS_MASTER_KEY: no answer holding a secret can be kept. */
let keyless: GatewayProcess;
let tenant: SeededOrg;
let other: SeededOrg;
let admin: DashboardClient;
let otherAdmin: DashboardClient;

interface App {
  id: string;
  name: string;
}
interface TopUp {
  transaction: { id: string; amount: string };
  wallet: { balance: string };
}

const appsOf = (org: SeededOrg) => `/dashboard/api/orgs/${org.org_id}/apps`;

/** How jsonb orders an object's keys: shorter first, then by their bytes. */
const jsonbKeyOrder = (a: string, b: string): number =>
  a.length - b.length || Buffer.compare(Buffer.from(a), Buffer.from(b));

/** The admin's create with an Idempotency-Key of raw bytes, over a raw socket. */
async function rawCreate(path: string, body: unknown, key: Buffer): Promise<Outcome> {
  const payload = encodeRequest({
    method: 'POST',
    target: path,
    headers: [
      ['host', `127.0.0.1:${gateway.port}`],
      ['origin', admin.origin],
      ['cookie', admin.cookie!],
      ['x-csrf-token', admin.csrfToken!],
      ['content-type', 'application/json'],
      ['idempotency-key', key],
    ],
    body: Buffer.from(JSON.stringify(body)),
    autoContentLength: true,
  });
  const { outcomes } = await exchange(gateway.port, payload, { timeoutMs: 20_000 });
  return outcomes[0]!;
}

async function appsNamed(orgId: string, name: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM apps WHERE org_id = $1 AND name = $2',
    [orgId, name],
  );
  return rows.map((row) => row.id);
}

async function topUps(orgId: string): Promise<string[]> {
  const { rows } = await db.query<{ amount: string }>(
    `SELECT amount::text FROM wallet_transactions WHERE org_id = $1 AND kind = 'topup' ORDER BY id`,
    [orgId],
  );
  return rows.map((row) => row.amount);
}

beforeAll(async () => {
  const { CREDENTIALS_MASTER_KEY: _unset, ...withoutMasterKey } = env;
  [gateway, locked, keyless] = await Promise.all([
    startGateway({ ...env, DASHBOARD_WALLET_TOPUP: 'true' }),
    startGateway(env),
    startGateway(withoutMasterKey),
  ]);
  [tenant, other] = await Promise.all([
    seed(env, ['--wallet', '100.00']),
    seed(env, ['--wallet', '100.00']),
  ]);
  const [adminEmail, otherEmail] = [uniqueEmail('idem-admin'), uniqueEmail('idem-other')];
  await createMember(env, adminEmail, tenant.org_id, 'admin');
  await createMember(env, otherEmail, other.org_id, 'admin');
  admin = await signInTo(gateway, adminEmail);
  otherAdmin = await signInTo(gateway, otherEmail);
});

afterAll(async () => {
  await Promise.all([gateway?.stop(), locked?.stop(), keyless?.stop()]);
});

describe('a create sent again with its Idempotency-Key', () => {
  it('answers the first answer, marked as replayed, and makes one app', async () => {
    const key = newIdempotencyKey();
    const name = `Replayed ${key.slice(-6)}`;
    const first = await admin.post<App>(appsOf(tenant), { name }, withIdempotencyKey(key));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await admin.post<App>(appsOf(tenant), { name }, withIdempotencyKey(key));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-content-type-options')).toBe('nosniff');
    expect(again.body).toEqual(first.body);
    // Byte for byte: the same fields in the same order.
    expect(JSON.stringify(again.body)).toBe(JSON.stringify(first.body));
    expect(await appsNamed(tenant.org_id, name)).toEqual([first.body.id]);
    // Without a key, the same body is a new app (keys are opt-in, as Stripe's).
    const unkeyed = await admin.post<App>(appsOf(tenant), { name });
    expect(unkeyed.status).toBe(201);
    expect(unkeyed.body.id).not.toBe(first.body.id);
    expect(await appsNamed(tenant.org_id, name)).toHaveLength(2);
  });

  it('replays an API key with its raw key, kept sealed in Postgres, never in the clear', async () => {
    const key = newIdempotencyKey();
    const path = `/dashboard/api/connections/${tenant.app_connection_id}/api-keys`;
    const body = { name: `replayed-key ${key.slice(-6)}` };
    const first = await admin.post<{ id: string; key: string }>(
      path,
      body,
      withIdempotencyKey(key),
    );
    expect(first.status).toBe(201);
    const again = await admin.post<{ id: string; key: string }>(
      path,
      body,
      withIdempotencyKey(key),
    );
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const { rows: keys } = await db.query('SELECT id FROM api_keys WHERE name = $1', [body.name]);
    expect(keys).toEqual([{ id: first.body.id }]);
    const { rows } = await db.query<{
      state: string;
      status: number;
      answer_sealed: string | null;
      answer_clear: unknown;
    }>(
      `SELECT state, status, answer_sealed, answer_clear FROM idempotency_keys
        WHERE org_id = $1 AND key = $2`,
      [tenant.org_id, key],
    );
    expect(rows).toEqual([
      { state: 'done', status: 201, answer_sealed: expect.any(String), answer_clear: null },
    ]);
    expect(rows[0]!.answer_sealed).not.toContain(first.body.key);
    expect(rows[0]!.answer_sealed!.startsWith('test-k1:')).toBe(true);
  });

  it('replays a webhook endpoint with its signing secret and a service key with its key', async () => {
    const webhookKey = newIdempotencyKey();
    const webhooks = `/dashboard/api/orgs/${tenant.org_id}/webhooks`;
    const endpoint = { url: `https://hooks.example.com/${webhookKey}` };
    const made = await admin.post<{ id: string; secret: string }>(
      webhooks,
      endpoint,
      withIdempotencyKey(webhookKey),
    );
    expect(made.status).toBe(201);
    const again = await admin.post(webhooks, endpoint, withIdempotencyKey(webhookKey));
    expect(again.status).toBe(201);
    expect(again.body).toEqual(made.body);
    const { rows } = await db.query('SELECT id FROM webhook_endpoints WHERE url = $1', [
      endpoint.url,
    ]);
    expect(rows).toEqual([{ id: made.body.id }]);

    const serviceKeyKey = newIdempotencyKey();
    const serviceKeys = `/dashboard/api/orgs/${tenant.org_id}/service-keys`;
    const before = await db.query('SELECT id FROM service_keys WHERE org_id = $1', [tenant.org_id]);
    const issued = await admin.post<{ id: string; key: string }>(
      serviceKeys,
      {},
      withIdempotencyKey(serviceKeyKey),
    );
    expect(issued.status).toBe(201);
    // No body is the empty body the route reads it as: the same request.
    const reissued = await admin.post(serviceKeys, undefined, withIdempotencyKey(serviceKeyKey));
    expect(reissued.status).toBe(201);
    expect(reissued.body).toEqual(issued.body);
    const after = await db.query('SELECT id FROM service_keys WHERE org_id = $1', [tenant.org_id]);
    expect(after.rowCount).toBe(before.rowCount! + 1);
  });

  it('refuses the key with another body (409 gw_idempotency_key_reused), creating nothing', async () => {
    const key = newIdempotencyKey();
    const first = await admin.post<App>(
      appsOf(tenant),
      { name: `First ${key}` },
      withIdempotencyKey(key),
    );
    expect(first.status).toBe(201);
    const changed = await admin.post<ErrorBody>(
      appsOf(tenant),
      { name: `Second ${key}` },
      withIdempotencyKey(key),
    );
    expect(changed.status).toBe(409);
    expect(changed.body.error.code).toBe('gw_idempotency_key_reused');
    expect(await appsNamed(tenant.org_id, `Second ${key}`)).toEqual([]);
    // The same key at another route is another key.
    const webhook = await admin.post(
      `/dashboard/api/orgs/${tenant.org_id}/webhooks`,
      { url: `https://hooks.example.com/other-route-${key}` },
      withIdempotencyKey(key),
    );
    expect(webhook.status).toBe(201);
  });

  it("is an organization's own: another organization's same key is another key", async () => {
    const key = newIdempotencyKey();
    const name = `Shared key ${key.slice(-6)}`;
    const ours = await admin.post<App>(appsOf(tenant), { name }, withIdempotencyKey(key));
    const theirs = await otherAdmin.post<App>(appsOf(other), { name }, withIdempotencyKey(key));
    expect([ours.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.id).not.toBe(ours.body.id);
    expect(await appsNamed(other.org_id, name)).toEqual([theirs.body.id]);
    expect(await appsNamed(tenant.org_id, name)).toEqual([ours.body.id]);
  });

  it('refuses a bad key with 400 before anything is made', async () => {
    const name = `Bad key ${randomUUID().slice(0, 8)}`;
    for (const bad of ['', 'k'.repeat(256), 'tab\there', 'clé-1']) {
      const answer = await admin.post<ErrorBody>(appsOf(tenant), { name }, withIdempotencyKey(bad));
      expect(answer.status, JSON.stringify(bad)).toBe(400);
      expect(answer.body.error.code).toBe('gw_invalid_request');
      expect(answer.body.error.message).toMatch(/^Idempotency-Key: /);
    }
    // DEL, which no fetch sends, over a raw socket. (A C0 control byte other than a tab is
    // refused by the HTTP parser itself, before any route: the fuzz test sends those.)
    const outcome = await rawCreate(
      appsOf(tenant),
      { name },
      Buffer.from('del\u007fhere', 'latin1'),
    );
    expect(outcome).toMatchObject({ kind: 'answered', status: 400 });
    expect(outcome.kind === 'answered' && JSON.parse(outcome.body)).toEqual({
      error: {
        code: 'gw_invalid_request',
        message: 'Idempotency-Key: must be printable ASCII (no other characters or bytes)',
      },
    });
    expect(await appsNamed(tenant.org_id, name)).toEqual([]);
    const { rows } = await db.query('SELECT 1 FROM idempotency_keys WHERE org_id = $1', [
      tenant.org_id,
    ]);
    const keysBefore = rows.length;
    // 255 characters is a key.
    const longest = await admin.post(appsOf(tenant), { name }, withIdempotencyKey('k'.repeat(255)));
    expect(longest.status).toBe(201);
    const after = await db.query('SELECT 1 FROM idempotency_keys WHERE org_id = $1', [
      tenant.org_id,
    ]);
    expect(after.rows.length).toBe(keysBefore + 1);
  });

  it('is taken again once expired, and the sweep deletes expired keys', async () => {
    const key = newIdempotencyKey();
    const name = `Expired ${key.slice(-6)}`;
    const first = await admin.post<App>(appsOf(tenant), { name }, withIdempotencyKey(key));
    expect(first.status).toBe(201);
    await db.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second'
        WHERE org_id = $1 AND key = $2`,
      [tenant.org_id, key],
    );
    const later = await admin.post<App>(appsOf(tenant), { name }, withIdempotencyKey(key));
    expect(later.status).toBe(201);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(later.body.id).not.toBe(first.body.id);

    const stale = newIdempotencyKey();
    await admin.post(
      appsOf(tenant),
      { name: `Swept ${stale.slice(-6)}` },
      withIdempotencyKey(stale),
    );
    await db.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 second'
        WHERE org_id = $1 AND key = $2`,
      [tenant.org_id, stale],
    );
    expect(await deleteExpiredIdempotencyKeys(db)).toBeGreaterThanOrEqual(1);
    const { rows } = await db.query('SELECT key FROM idempotency_keys WHERE key = ANY($1)', [
      [key, stale],
    ]);
    expect(rows).toEqual([{ key }]);
  });
});

describe('a wallet top-up with an Idempotency-Key', () => {
  it('sent twice adds its money once', async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const email = uniqueEmail('idem-topup');
    await createMember(env, email, org.org_id, 'admin');
    const owner = await signInTo(gateway, email);
    const path = `/dashboard/api/orgs/${org.org_id}/wallet/top-ups`;
    const key = newIdempotencyKey();
    const first = await owner.post<TopUp>(path, { amount: '10' }, withIdempotencyKey(key));
    expect(first.status).toBe(201);
    expect(first.body.wallet.balance).toBe('110.000000000000');
    const again = await owner.post<TopUp>(path, { amount: '10' }, withIdempotencyKey(key));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const wallet = await owner.get<{ balance: string }>(`/dashboard/api/orgs/${org.org_id}/wallet`);
    expect(wallet.body.balance).toBe('110.000000000000');
    expect(await topUps(org.org_id)).toEqual(['100.000000000000', '10.000000000000']);
  });

  it('sent many times at once adds its money once: the others are refused or replayed', async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const email = uniqueEmail('idem-race');
    await createMember(env, email, org.org_id, 'admin');
    const owner = await signInTo(gateway, email);
    const path = `/dashboard/api/orgs/${org.org_id}/wallet/top-ups`;
    const key = newIdempotencyKey();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        owner.post<TopUp & ErrorBody>(path, { amount: '2.5' }, withIdempotencyKey(key)),
      ),
    );
    const made = answers.filter((answer) => answer.status === 201);
    const refused = answers.filter((answer) => answer.status !== 201);
    expect(made.length).toBeGreaterThanOrEqual(1);
    for (const answer of refused) {
      expect(answer.status).toBe(409);
      expect(answer.body.error.code).toBe('gw_conflict');
      expect(answer.headers.get('retry-after')).toBe('1');
    }
    const ids = new Set(made.map((answer) => answer.body.transaction.id));
    expect(ids.size).toBe(1);
    expect(await topUps(org.org_id)).toEqual(['100.000000000000', '2.500000000000']);
    // Once the first has answered, the key replays it.
    const after = await owner.post<TopUp>(path, { amount: '2.5' }, withIdempotencyKey(key));
    expect(after.status).toBe(201);
    expect(after.body.transaction.id).toBe([...ids][0]);
    const wallet = await owner.get<{ balance: string }>(`/dashboard/api/orgs/${org.org_id}/wallet`);
    expect(wallet.body.balance).toBe('102.500000000000');
  });

  it('refused (top-ups off) leaves its key free: the same request where they are on tops up', async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const email = uniqueEmail('idem-refused');
    await createMember(env, email, org.org_id, 'admin');
    const [onLocked, onOpen] = [await signInTo(locked, email), await signInTo(gateway, email)];
    const path = `/dashboard/api/orgs/${org.org_id}/wallet/top-ups`;
    const key = newIdempotencyKey();
    const refused = await onLocked.post<ErrorBody>(path, { amount: '1' }, withIdempotencyKey(key));
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('gw_wallet_topup_disabled');
    const { rows } = await db.query('SELECT 1 FROM idempotency_keys WHERE org_id = $1', [
      org.org_id,
    ]);
    expect(rows).toEqual([]);
    const made = await onOpen.post<TopUp>(path, { amount: '1' }, withIdempotencyKey(key));
    expect(made.status).toBe(201);
    expect(made.headers.get('idempotent-replayed')).toBeNull();
    expect(await topUps(org.org_id)).toEqual(['100.000000000000', '1.000000000000']);
  });
});

describe('without a master key', () => {
  it('keeps no answer holding a secret: the key is refused again, and no second key is made', async () => {
    const email = uniqueEmail('idem-keyless');
    await createMember(env, email, tenant.org_id, 'admin');
    const client = await signInTo(keyless, email);
    const path = `/dashboard/api/orgs/${tenant.org_id}/service-keys`;
    const key = newIdempotencyKey();
    const issued = await client.post<{ id: string }>(path, {}, withIdempotencyKey(key));
    expect(issued.status).toBe(201);
    const again = await client.post<ErrorBody>(path, {}, withIdempotencyKey(key));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('gw_conflict');
    expect(again.body.error.message).toMatch(/CREDENTIALS_MASTER_KEY/);
    const { rows } = await db.query(
      `SELECT state, answer_sealed, answer_clear FROM idempotency_keys
        WHERE org_id = $1 AND key = $2`,
      [tenant.org_id, key],
    );
    expect(rows).toEqual([{ state: 'done', answer_sealed: null, answer_clear: null }]);
    // An answer without a secret is kept as it is, and replayed byte for byte (its fields in
    // their order, which jsonb alone does not keep).
    const appKey = newIdempotencyKey();
    const name = `Keyless ${appKey.slice(-6)}`;
    const app = await client.post<App>(appsOf(tenant), { name }, withIdempotencyKey(appKey));
    const replayed = await client.post<App>(appsOf(tenant), { name }, withIdempotencyKey(appKey));
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(app.body);
    expect(JSON.stringify(replayed.body)).toBe(JSON.stringify(app.body));
    expect(Object.keys(app.body)).not.toEqual(Object.keys(app.body).sort(jsonbKeyOrder));
  });
});

describe('/openapi.json', () => {
  it('documents the Idempotency-Key header of every create that takes it, and the replay header', async () => {
    const document = await getJson<{
      paths: Record<
        string,
        Record<
          string,
          {
            parameters?: Array<{ in: string; name: string; required?: boolean }>;
            responses: Record<string, { headers?: Record<string, unknown> }>;
          }
        >
      >;
    }>(`${gateway.url}/openapi.json`);
    const creates = [
      '/dashboard/api/orgs/{org_id}/apps',
      '/dashboard/api/connections/{connection_id}/api-keys',
      '/dashboard/api/orgs/{org_id}/service-keys',
      '/dashboard/api/orgs/{org_id}/webhooks',
      '/dashboard/api/orgs/{org_id}/wallet/top-ups',
      '/dashboard/api/apps/{app_id}/connections',
      '/dashboard/api/apps/{app_id}/oauth-clients',
      '/dashboard/api/orgs/{org_id}/invitations',
      '/dashboard/api/orgs/{org_id}/credentials',
    ];
    for (const path of creates) {
      const operation = document.body.paths[path]!.post!;
      expect(operation.parameters, path).toContainEqual(
        expect.objectContaining({ in: 'header', name: 'Idempotency-Key', required: false }),
      );
      expect(operation.responses['201']!.headers, path).toHaveProperty('Idempotent-Replayed');
      expect(Object.keys(operation.responses)).toContain('409');
    }
    // The credit grants honour their keys themselves: documented too.
    const grants =
      document.body.paths['/dashboard/api/product-users/{product_end_user_id}/credit-grants']!
        .post!;
    expect(grants.parameters).toContainEqual(
      expect.objectContaining({ in: 'header', name: 'Idempotency-Key' }),
    );
    // Reads take none.
    expect(
      document.body.paths['/dashboard/api/orgs/{org_id}/apps']!.get!.parameters ?? [],
    ).not.toContainEqual(expect.objectContaining({ name: 'Idempotency-Key' }));
  });
});
