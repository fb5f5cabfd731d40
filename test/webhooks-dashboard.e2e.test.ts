// Webhook endpoints through the dashboard API, as a browser drives it (cookie, CSRF, Origin):
// owners and admins manage them, every change is audited without the secret, the secret is
// shown once, another organization's endpoints answer 404, and the delivery log, test events,
// redelivery and the wallet's low-balance alert work as documented.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { createMember, DashboardClient, signInTo, uniqueEmail } from './support/dashboard.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { eventually } from './support/services.js';
import { WebhookReceiver, webhookEnv } from './support/webhook-receiver.js';
import type { ErrorBody } from './support/http.js';

const { prefix, db } = isolatedContext('wh-dashboard');
const env = webhookEnv(prefix);
const receiver = new WebhookReceiver();
let gateway: GatewayProcess;
let tenant: SeededOrg;
let other: SeededOrg;
const emails = { admin: uniqueEmail('wh-admin'), viewer: uniqueEmail('wh-viewer') };
const outsiderEmail = uniqueEmail('wh-outsider');

interface Endpoint {
  id: string;
  org_id: string;
  url: string;
  description: string;
  event_types: string[];
  status: string;
  disabled_reason: string | null;
  previous_secret_expires_at: string | null;
  secret?: string;
}
interface Deliveries {
  data: Array<{
    id: string;
    message_id: string;
    status: string;
    event_type: string;
    payload: { type: string; data: Record<string, unknown> };
    attempts: Array<{ status_code: number | null; error: string | null }>;
  }>;
  next_cursor: string | null;
}

const base = () => `/dashboard/api/orgs/${tenant.org_id}/webhooks`;

async function create(
  client: DashboardClient,
  path: string,
  extra: Record<string, unknown> = {},
): Promise<Endpoint> {
  const created = await client.post<Endpoint>(base(), { url: receiver.endpoint(path), ...extra });
  expect(created.status).toBe(201);
  receiver.setSecrets(path, [created.body.secret!]);
  return created.body;
}

beforeAll(async () => {
  await receiver.start();
  gateway = await startGateway(env);
  [tenant, other] = await Promise.all([seed(env), seed(env)]);
  await createMember(env, emails.admin, tenant.org_id, 'admin');
  await createMember(env, emails.viewer, tenant.org_id, 'viewer');
  await createMember(env, outsiderEmail, other.org_id, 'owner');
});

afterAll(async () => {
  await gateway?.stop();
  await db.query('DELETE FROM webhook_endpoints WHERE org_id = ANY($1)', [
    [tenant.org_id, other.org_id],
  ]);
  await receiver.stop();
});

afterAll(() => {
  expect(receiver.unverified).toEqual([]);
});

describe('managing endpoints', () => {
  it('an admin adds one: the secret is in that answer only, the audit log never has it', async () => {
    const admin = await signInTo(gateway, emails.admin);
    const created = await create(admin, '/managed', {
      description: 'billing events',
      event_types: ['wallet.low_balance', 'cap.threshold'],
    });
    expect(created).toMatchObject({
      org_id: tenant.org_id,
      url: receiver.endpoint('/managed'),
      description: 'billing events',
      event_types: ['wallet.low_balance', 'cap.threshold'],
      status: 'enabled',
      disabled_reason: null,
    });
    expect(created.secret).toMatch(/^whsec_/);
    const list = await admin.get<{ data: Endpoint[]; http_urls_allowed: boolean }>(base());
    expect(list.status).toBe(200);
    // this gateway takes http:// URLs (WEBHOOK_ALLOW_HTTP=true): the page's URL label says so
    expect(list.body.http_urls_allowed).toBe(true);
    const listed = list.body.data.find((endpoint) => endpoint.id === created.id)!;
    expect(listed).not.toHaveProperty('secret');
    const { rows } = await db.query<{ action: string; details: Record<string, unknown> }>(
      'SELECT action, details FROM dashboard_audit_log WHERE object_id = $1',
      [created.id],
    );
    expect(rows).toEqual([
      {
        action: 'webhook.create',
        details: {
          url: created.url,
          description: 'billing events',
          event_types: ['wallet.low_balance', 'cap.threshold'],
        },
      },
    ]);
    expect(JSON.stringify(rows)).not.toContain(created.secret!.slice(6));
  });

  it('a viewer can neither list nor add; nothing is added', async () => {
    const viewer = await signInTo(gateway, emails.viewer);
    for (const answer of [
      await viewer.get<ErrorBody>(base()),
      await viewer.post<ErrorBody>(base(), { url: receiver.endpoint('/viewer') }),
    ]) {
      expect(answer.status).toBe(403);
      expect(answer.body.error.code).toBe('gw_role_forbidden');
    }
    const { rows } = await db.query('SELECT 1 FROM webhook_endpoints WHERE url = $1', [
      receiver.endpoint('/viewer'),
    ]);
    expect(rows).toEqual([]);
  });

  it('refuses bad input with the field named, changing nothing', async () => {
    const admin = await signInTo(gateway, emails.admin);
    const cases: Array<[unknown, string, string]> = [
      [
        { url: 'ftp://hooks.example.com/' },
        'gw_webhook_url_not_allowed',
        'url: must be an http or https URL',
      ],
      [{ url: 'https://user:pw@hooks.example.com/' }, 'gw_webhook_url_not_allowed', 'credentials'],
      [
        { url: 'https://hooks.example.com:0/' },
        'gw_webhook_url_not_allowed',
        'url: must not use port 0',
      ],
      [
        { url: 'https://hooks.example.com/', event_types: ['nope'] },
        'gw_invalid_request',
        'event_types',
      ],
      [
        { url: 'https://hooks.example.com/', description: 'd'.repeat(501) },
        'gw_invalid_request',
        'description',
      ],
      [{ url: 'https://hooks.example.com/', secret: 'mine' }, 'gw_invalid_request', 'secret'],
      [{}, 'gw_invalid_request', 'url'],
    ];
    const before = await db.query(
      'SELECT count(*)::int AS n FROM webhook_endpoints WHERE org_id = $1',
      [tenant.org_id],
    );
    for (const [body, code, message] of cases) {
      const answer = await admin.post<ErrorBody>(base(), body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.code).toBe(code);
      expect(answer.body.error.message).toContain(message);
    }
    const after = await db.query(
      'SELECT count(*)::int AS n FROM webhook_endpoints WHERE org_id = $1',
      [tenant.org_id],
    );
    expect(after.rows).toEqual(before.rows);
  });

  it('disable, enable, change the filter, rotate the secret, delete', async () => {
    const admin = await signInTo(gateway, emails.admin);
    const endpoint = await create(admin, '/lifecycle');
    const path = `${base()}/${endpoint.id}`;
    // A PATCH naming nothing (an empty object, or no body) is refused and audits nothing
    // (decision 584); the audit rows below count only the two real changes.
    for (const body of [{}, undefined]) {
      const nothing = await admin.request<ErrorBody>('PATCH', path, body);
      expect(nothing.status).toBe(400);
      expect(nothing.body.error).toEqual({
        code: 'gw_invalid_request',
        message: 'body: name at least one field to change',
      });
    }
    const disabled = await admin.request<Endpoint>('PATCH', path, { enabled: false });
    expect(disabled.body).toMatchObject({ status: 'disabled', disabled_reason: 'manual' });
    const refused = await admin.post<ErrorBody>(`${path}/test`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('gw_conflict');
    const enabled = await admin.request<Endpoint>('PATCH', path, {
      enabled: true,
      event_types: ['api_key.created'],
      description: 'keys',
    });
    expect(enabled.body).toMatchObject({
      status: 'enabled',
      disabled_reason: null,
      event_types: ['api_key.created'],
      description: 'keys',
    });
    const rotated = await admin.post<Endpoint>(`${path}/rotate-secret`, { grace_seconds: 60 });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    expect(Date.parse(rotated.body.previous_secret_expires_at!)).toBeGreaterThan(Date.now());
    receiver.setSecrets('/lifecycle', [rotated.body.secret!]);
    const tested = await admin.post<{ message_id: string }>(`${path}/test`);
    expect(tested.status).toBe(202);
    const [message] = await receiver.waitFor('/lifecycle', 'webhook.test');
    expect(message!.id).toBe(tested.body.message_id);
    // Both secrets signed it: the new one verified it, the old one's signature is there too.
    expect(message!.signature.split(' ')).toHaveLength(2);

    const deleted = await admin.request('DELETE', path);
    expect(deleted).toMatchObject({ status: 200, body: { id: endpoint.id, deleted: true } });
    expect((await admin.request<ErrorBody>('DELETE', path)).status).toBe(404);
    const { rows } = await db.query(
      'SELECT action FROM dashboard_audit_log WHERE object_id = $1 ORDER BY id',
      [endpoint.id],
    );
    expect(rows.map((row: { action: string }) => row.action)).toEqual([
      'webhook.create',
      'webhook.update',
      'webhook.update',
      'webhook.rotate_secret',
      'webhook.test',
      'webhook.delete',
    ]);
  });

  it('an organization has at most 20 endpoints', async () => {
    const { rows } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_endpoints WHERE org_id = $1',
      [tenant.org_id],
    );
    const admin = await signInTo(gateway, emails.admin);
    for (let index = rows[0]!.n; index < 20; index += 1) {
      expect((await admin.post(base(), { url: 'https://hooks.example.invalid/x' })).status).toBe(
        201,
      );
    }
    const refused = await admin.post<ErrorBody>(base(), { url: 'https://hooks.example.invalid/x' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain('at most 20');
    await db.query(
      "DELETE FROM webhook_endpoints WHERE org_id = $1 AND url LIKE 'https://hooks.example.invalid/%'",
      [tenant.org_id],
    );
  });
});

describe('the delivery log and redelivery', () => {
  it('lists deliveries newest first with their attempts, pages them, and sends them again', async () => {
    const admin = await signInTo(gateway, emails.admin);
    const endpoint = await create(admin, '/log');
    // A message is refused once, then taken. "Once" as the gateway saw it: on a busy machine an
    // attempt can outlast WEBHOOK_TIMEOUT_MS (logged with no status, its answer lost), so the
    // receiver refuses until the gateway has logged a 502 for the message, not just its first
    // arrival. The gateway makes a delivery's next attempt only after logging the last one.
    receiver.behave('/log', async (message) => {
      const { rowCount } = await db.query(
        `SELECT 1 FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
          WHERE d.endpoint_id = $1 AND d.message_id = $2 AND a.status_code = 502`,
        [endpoint.id, message.id],
      );
      return { status: rowCount === 0 ? 502 : 200 };
    });
    const path = `${base()}/${endpoint.id}`;
    /** A delivery's answered attempts, newest first; every other one must have timed out. */
    const answered = (attempts: Deliveries['data'][number]['attempts']): Array<number | null> => {
      for (const unanswered of attempts.filter((attempt) => attempt.status_code === null)) {
        expect(unanswered.error).toMatch(/^timeout: no answer within \d+ ms$/);
      }
      return attempts
        .filter((attempt) => attempt.status_code !== null)
        .map((attempt) => attempt.status_code);
    };
    const first = (await admin.post<{ message_id: string }>(`${path}/test`)).body.message_id;
    const second = (await admin.post<{ message_id: string }>(`${path}/test`)).body.message_id;
    const log = await eventually(async () => {
      const answer = await admin.get<Deliveries>(`${path}/deliveries?status=delivered`);
      return answer.body.data.length === 2 ? answer.body : undefined;
    }, 15_000);
    expect(log.data.map((delivery) => delivery.message_id)).toEqual([second, first]);
    expect(log.data[1]).toMatchObject({ status: 'delivered', event_type: 'webhook.test' });
    expect(log.data[1]!.attempts[0]!.status_code).toBe(200);
    expect(answered(log.data[1]!.attempts)).toEqual([200, 502]);
    expect(log.data[1]!.payload).toMatchObject({ type: 'webhook.test', data: { id: endpoint.id } });

    const page = await admin.get<Deliveries>(`${path}/deliveries?limit=1`);
    expect(page.body.data.map((delivery) => delivery.message_id)).toEqual([second]);
    const next = await admin.get<Deliveries>(
      `${path}/deliveries?limit=1&cursor=${page.body.next_cursor}`,
    );
    expect(next.body.data.map((delivery) => delivery.message_id)).toEqual([first]);
    expect(next.body.next_cursor).toBeNull();
    for (const query of ['limit=0', 'cursor=abc', 'status=lost']) {
      const bad = await admin.get<ErrorBody>(`${path}/deliveries?${query}`);
      expect(bad.status, query).toBe(400);
      expect(bad.body.error.code).toBe('gw_invalid_request');
    }

    const again = await admin.post<{ redelivered: number }>(`${path}/redeliver`, {
      message_id: first,
    });
    expect(again).toMatchObject({ status: 202, body: { redelivered: 1 } });
    const redelivered = await eventually(async () => {
      const answer = await admin.get<Deliveries>(`${path}/deliveries?status=delivered`);
      const delivery = answer.body.data.find((entry) => entry.message_id === first);
      return delivery && answered(delivery.attempts).length === 3 ? delivery : undefined;
    });
    expect(answered(redelivered.attempts)).toEqual([200, 200, 502]);
    expect(
      receiver.messages('/log').filter((message) => message.id === first && message.status === 200)
        .length,
    ).toBeGreaterThanOrEqual(2);
    for (const body of [
      {},
      { message_id: first, since: new Date().toISOString() },
      { since: 'yesterday' },
    ]) {
      const bad = await admin.post<ErrorBody>(`${path}/redeliver`, body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    const missing = await admin.post<ErrorBody>(`${path}/redeliver`, { message_id: 'msg_none' });
    expect(missing.status).toBe(404);
  });
});

describe('tenants', () => {
  it("another organization's endpoint answers 404 everywhere, and stays as it was", async () => {
    const admin = await signInTo(gateway, emails.admin);
    const mine = await create(admin, '/mine');
    const outsider = await signInTo(gateway, outsiderEmail);
    // Through their own organization's path, naming our endpoint.
    const theirs = `/dashboard/api/orgs/${other.org_id}/webhooks/${mine.id}`;
    const attempts: Array<[string, string, unknown]> = [
      ['PATCH', theirs, { enabled: false }],
      ['DELETE', theirs, undefined],
      ['POST', `${theirs}/rotate-secret`, {}],
      ['POST', `${theirs}/test`, undefined],
      ['GET', `${theirs}/deliveries`, undefined],
      ['POST', `${theirs}/redeliver`, { since: new Date(0).toISOString() }],
    ];
    for (const [method, path, body] of attempts) {
      const answer = await outsider.request<ErrorBody>(method, path, body);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.error.code).toBe('gw_not_found');
    }
    // Through ours: not a member.
    const ours = await outsider.get<ErrorBody>(base());
    expect(ours.status).toBe(404);
    const { rows } = await db.query<{ status: string; secret_sealed: string }>(
      'SELECT status FROM webhook_endpoints WHERE id = $1',
      [mine.id],
    );
    expect(rows).toEqual([{ status: 'enabled' }]);
    expect(receiver.messages('/mine')).toEqual([]);
  });
});

describe('the wallet alert', () => {
  it('any member reads it; an admin sets and removes it, audited', async () => {
    const path = `/dashboard/api/orgs/${tenant.org_id}/wallet-alert`;
    const viewer = await signInTo(gateway, emails.viewer);
    expect((await viewer.get(path)).body).toEqual({
      org_id: tenant.org_id,
      low_balance_threshold: null,
      currency: 'USD',
    });
    expect(
      (await viewer.request<ErrorBody>('PUT', path, { low_balance_threshold: '1' })).status,
    ).toBe(403);
    const admin = await signInTo(gateway, emails.admin);
    const set = await admin.request('PUT', path, { low_balance_threshold: '5.5' });
    expect(set).toMatchObject({ status: 200, body: { low_balance_threshold: '5.500000000000' } });
    for (const [value, code] of [
      ['-1', 'gw_invalid_request'],
      ['lots', 'gw_invalid_request'],
      ['2000000', 'gw_amount_out_of_range'],
    ] as const) {
      const bad = await admin.request<ErrorBody>('PUT', path, { low_balance_threshold: value });
      expect(bad.status, value).toBe(400);
      expect(bad.body.error.code).toBe(code);
    }
    expect((await viewer.get(path)).body).toMatchObject({
      low_balance_threshold: '5.500000000000',
    });
    const removed = await admin.request('PUT', path, { low_balance_threshold: null });
    expect(removed.body).toMatchObject({ low_balance_threshold: null });
    const { rows } = await db.query<{ details: unknown }>(
      "SELECT details FROM dashboard_audit_log WHERE org_id = $1 AND action = 'wallet.set_alert' ORDER BY id",
      [tenant.org_id],
    );
    expect(rows.map((row) => row.details)).toEqual([
      { low_balance_threshold: '5.500000000000' },
      { low_balance_threshold: null },
    ]);
  });
});
