// When the dispatcher disables an endpoint on its own (a 410, or failing for
// WEBHOOK_DISABLE_AFTER_S), or finds it failing for a day, the organization's owners and admins
// with a verified address are mailed, once (decisions 525-527): not its members or viewers, not another organization's
// people, nobody without SMTP_URL, nobody who is no longer an owner or admin when the notice
// is sent (decision 567); the mail names the endpoint by its description and host,
// never its secret or the rest of its URL. Against the real Postgres and Redis, a real SMTP
// server (test/support/mail-catcher.ts) and the webhook receiver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { AccountMail } from '../src/accounts/account-mail.js';
import { changeRole, removeMember } from '../src/accounts/members.js';
import { createUser } from '../src/accounts/users.js';
import { ApiKeyStore } from '../src/auth/api-key-store.js';
import { parseMasterKeys } from '../src/credentials/secret-box.js';
import { createDbPool, withTransaction, type DbPool } from '../src/db/pool.js';
import { MailOutbox } from '../src/email/outbox.js';
import { createLogger } from '../src/log.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { DeliveryClient } from '../src/webhooks/delivery-client.js';
import { EndpointNoticeMail } from '../src/webhooks/endpoint-notices.js';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.js';
import {
  createEndpoint,
  findEndpoint,
  updateEndpoint,
  type WebhookSettings,
} from '../src/webhooks/endpoints.js';
import { emitEvents } from '../src/webhooks/outbox.js';
import { parseRetrySchedule } from '../src/webhooks/retry-schedule.js';
import { isolatedContext } from './support/context.js';
import { TEST_MASTER_KEY } from './support/env.js';
import { startMailCatcher, type MailCatcher } from './support/mail-catcher.js';
import { startGateway, type GatewayProcess } from './support/processes.js';
import { eventually } from './support/services.js';
import { WebhookReceiver, webhookEnv } from './support/webhook-receiver.js';

// A database of its own: no other file's dispatcher (without SMTP_URL) disables these
// endpoints, and no other file's e-mail sender sends these messages.
const context = isolatedContext('wh-disable-notice', { ownDatabase: true });
const { prefix, db } = context;
const pool = db as unknown as DbPool;
const PUBLIC_ORIGIN = 'https://gw.example.test';
const env: Record<string, string> = {
  ...webhookEnv(prefix),
  DATABASE_URL: context.env.DATABASE_URL!,
};
const SENDER_TIMING = { firstRetryDelayMs: 500, stopWaitMs: 500 };
const box = parseMasterKeys(TEST_MASTER_KEY, env.CREDENTIALS_MASTER_KEY_ID!, undefined);
const settings: WebhookSettings = { policy: { allowHttp: true, allowPrivate: true }, box };
const receiver = new WebhookReceiver();
let catcher: MailCatcher;

const mailingEnv = (): Record<string, string> => ({
  ...env,
  SMTP_URL: catcher.url,
  EMAIL_FROM: 'gw <no-reply@gw.example.test>',
  PUBLIC_ORIGIN,
});

/** An organization and its people: who should be mailed and who should not. */
interface Org {
  readonly id: string;
  readonly name: string;
  readonly owner: string;
  readonly admin: string;
  /** An admin whose address is not verified (a self-service sign-up). */
  readonly unverifiedAdmin: string;
  readonly member: string;
  readonly viewer: string;
}

async function newOrg(label: string): Promise<Org> {
  const name = `${label} ${Math.random().toString(36).slice(2, 8)}`;
  const id = await createOrganization(db, name);
  const person = async (role: 'owner' | 'admin' | 'member' | 'viewer', verified = true) => {
    const email = `${label}-${role}${verified ? '' : '-unverified'}-${Math.random().toString(36).slice(2, 8)}@example.com`;
    await createUser(pool, {
      email,
      password: 'correct horse battery staple',
      ...(!verified && { signup: { holdMs: null } }),
      membership: { orgId: id, role, actor: { userId: 'test' } },
    });
    return email;
  };
  return {
    id,
    name,
    owner: await person('owner'),
    admin: await person('admin'),
    unverifiedAdmin: await person('admin', false),
    member: await person('member'),
    viewer: await person('viewer'),
  };
}

/** The URL's path and query stand for a credential (a chat service's incoming-webhook URL). */
const SECRET_PATH = 'T0PATHSECRET/B0PATHSECRET';
const SECRET_QUERY = 'token=QUERYSECRET123';

async function addEndpoint(
  org: Org,
  name: string,
  description: string,
): Promise<{ id: string; secret: string; path: string; url: string }> {
  const path = `/${name}/${SECRET_PATH}?${SECRET_QUERY}`;
  const url = receiver.endpoint(path);
  const created = await createEndpoint(pool, settings, { userId: 'test' }, org.id, {
    url,
    description,
  });
  if ('code' in created) throw new Error(created.message);
  receiver.setSecrets(path, [created.secret]);
  return { id: created.row.id, secret: created.secret, path, url };
}

const sendTest = (org: Org, endpointId: string) =>
  emitEvents(db, [{ orgId: org.id, type: 'webhook.test', data: { id: endpointId } }]);

async function waitDisabled(id: string): Promise<string> {
  return eventually(async () => {
    const { rows } = await db.query<{ status: string; disabled_reason: string | null }>(
      'SELECT status, disabled_reason FROM webhook_endpoints WHERE id = $1',
      [id],
    );
    return rows[0]?.status === 'disabled' ? rows[0].disabled_reason! : undefined;
  }, 20_000);
}

async function outboxRows(): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM email_outbox');
  return rows[0]!.n;
}

/** Every queued message sent: what the catcher has is all there is. */
const outboxEmpty = () =>
  eventually(async () => ((await outboxRows()) === 0 ? true : undefined), 30_000);

const mailedTo = (address: string) => catcher.mails.filter((mail) => mail.to.includes(address));

function expectOnlyAdminsMailed(org: Org, count = 1): void {
  expect(mailedTo(org.owner)).toHaveLength(count);
  expect(mailedTo(org.admin)).toHaveLength(count);
  for (const address of [org.unverifiedAdmin, org.member, org.viewer]) {
    expect(mailedTo(address)).toEqual([]);
  }
}

function expectNothingSecret(
  text: string,
  endpoint: { secret: string; path: string; url: string },
): void {
  expect(text).not.toContain(endpoint.secret);
  expect(text).not.toContain(endpoint.secret.slice('whsec_'.length, 20));
  expect(text).not.toContain('PATHSECRET');
  expect(text).not.toContain('QUERYSECRET');
  expect(text).not.toContain(endpoint.url);
}

beforeAll(async () => {
  await receiver.start();
  catcher = await startMailCatcher();
});

afterAll(async () => {
  await receiver.stop();
  await catcher.close();
});

afterAll(() => {
  expect(receiver.unverified).toEqual([]);
});

describe('with SMTP_URL', () => {
  let gateway: GatewayProcess;
  beforeAll(async () => {
    gateway = await startGateway(mailingEnv(), { emailSenderTiming: SENDER_TIMING });
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  it('a 410 mails each owner and admin with a verified address, once, and nobody else', async () => {
    const org = await newOrg('gone');
    const other = await newOrg('bystander');
    const endpoint = await addEndpoint(org, 'gone', 'Orders sync');
    const healthy = await addEndpoint(other, 'healthy', 'Bystander');
    receiver.behave(endpoint.path, () => ({ status: 410 }));
    await sendTest(org, endpoint.id);
    await sendTest(other, healthy.id);
    expect(await waitDisabled(endpoint.id)).toBe('gone');
    await catcher.nth(org.owner, 1, 30_000);
    await catcher.nth(org.admin, 1, 30_000);
    await outboxEmpty();
    expectOnlyAdminsMailed(org);
    for (const address of [other.owner, other.admin, other.member, other.viewer]) {
      expect(mailedTo(address)).toEqual([]);
    }

    const { rows: states } = await db.query<{ failing_since: Date }>(
      'SELECT failing_since FROM webhook_endpoint_states WHERE endpoint_id = $1',
      [endpoint.id],
    );
    const [mail] = mailedTo(org.admin);
    expect(mail!.subject).toBe(`A webhook endpoint of ${org.name} was disabled`);
    const host = new URL(endpoint.url).host;
    expect(mail!.text).toContain(
      `The webhook endpoint "Orders sync" of the organization "${org.name}"`,
    );
    expect(mail!.text).toContain(`Endpoint: ${endpoint.id}, sending to ${host}\n`);
    expect(mail!.text).toContain('Why: it answered 410 Gone');
    expect(mail!.text).toContain(`Failing since: ${states[0]!.failing_since.toISOString()}`);
    expect(mail!.text).toContain('last successful delivery: never');
    expect(mail!.text).toContain(
      'events that happen while it is disabled, are kept for it (45 days)',
    );
    expect(mail!.text).toContain(`\n${PUBLIC_ORIGIN}/dashboard/orgs/${org.id}/webhooks\n`);
    expect(mail!.text).toContain(`You receive this as an admin of "${org.name}".`);
    expect(mailedTo(org.owner)[0]!.text).toContain(
      `You receive this as an owner of "${org.name}".`,
    );
    for (const sent of [...mailedTo(org.owner), ...mailedTo(org.admin)]) {
      expectNothingSecret(sent.raw, endpoint);
      expectNothingSecret(sent.text, endpoint);
    }

    // Enabled again and disabled again within the hour: not mailed again (decision 526);
    // the disable itself is as before.
    receiver.behave(endpoint.path, () => ({ status: 410 }));
    const enabled = await updateEndpoint(pool, settings, { userId: 'test' }, org.id, endpoint.id, {
      enabled: true,
    });
    expect(enabled).toMatchObject({ status: 'enabled' });
    await sendTest(org, endpoint.id);
    expect(await waitDisabled(endpoint.id)).toBe('gone');
    // Queued in the disabling transaction: none is, so none will be.
    expect(await outboxRows()).toBe(0);
    expectOnlyAdminsMailed(org);
    const { rows: audit } = await db.query(
      "SELECT user_id FROM dashboard_audit_log WHERE object_id = $1 AND action = 'webhook.disable'",
      [endpoint.id],
    );
    expect(audit).toEqual([{ user_id: 'system' }, { user_id: 'system' }]);

    // An hour on, a disable is mailed again.
    await db.query(
      "UPDATE webhook_endpoints SET disable_notice_at = now() - interval '61 minutes' WHERE id = $1",
      [endpoint.id],
    );
    await updateEndpoint(pool, settings, { userId: 'test' }, org.id, endpoint.id, {
      enabled: true,
    });
    await sendTest(org, endpoint.id);
    await catcher.nth(org.owner, 2, 30_000);
    await catcher.nth(org.admin, 2, 30_000);
    await outboxEmpty();
    expectOnlyAdminsMailed(org, 2);
  }, 120_000);

  it('an endpoint failing for the whole window mails its owners and admins why and since when', async () => {
    const org = await newOrg('failing');
    const endpoint = await addEndpoint(org, 'failing', '');
    receiver.behave(endpoint.path, () => ({ status: 500 }));
    const { rows } = await db.query<{ failing_since: Date }>(
      `UPDATE webhook_endpoint_states SET failing_since = now() - interval '6 days'
        WHERE endpoint_id = $1 RETURNING failing_since`,
      [endpoint.id],
    );
    await sendTest(org, endpoint.id);
    expect(await waitDisabled(endpoint.id)).toBe('failing');
    await catcher.nth(org.owner, 1, 30_000);
    await catcher.nth(org.admin, 1, 30_000);
    await outboxEmpty();
    expectOnlyAdminsMailed(org);
    const [mail] = mailedTo(org.owner);
    expect(mail!.text).toContain(`A webhook endpoint of the organization "${org.name}"`);
    expect(mail!.text).toContain(
      `Why: every delivery to it failed for 5 days: no\ndelivery has succeeded since ${rows[0]!.failing_since.toISOString()}`,
    );
    expectNothingSecret(mail!.raw, endpoint);
  }, 60_000);

  it('an endpoint failing for a day warns its owners and admins once, and stays enabled', async () => {
    const org = await newOrg('warned');
    const endpoint = await addEndpoint(org, 'warned', 'Billing sync');
    receiver.behave(endpoint.path, () => ({ status: 500 }));
    const { rows } = await db.query<{ failing_since: Date }>(
      `UPDATE webhook_endpoint_states SET failing_since = now() - interval '25 hours'
        WHERE endpoint_id = $1 RETURNING failing_since`,
      [endpoint.id],
    );
    const failingSince = rows[0]!.failing_since;
    await sendTest(org, endpoint.id);
    await catcher.nth(org.owner, 1, 30_000);
    await catcher.nth(org.admin, 1, 30_000);
    // A second and a third failed attempt (its retries) warn nobody again.
    await eventually(async () => {
      const { rows: attempts } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_attempts a
           JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1`,
        [endpoint.id],
      );
      return attempts[0]!.n >= 3 ? true : undefined;
    }, 20_000);
    await outboxEmpty();
    expectOnlyAdminsMailed(org);
    const { rows: state } = await db.query(
      'SELECT status, failing_notice_for FROM webhook_endpoints WHERE id = $1',
      [endpoint.id],
    );
    expect(state).toEqual([{ status: 'enabled', failing_notice_for: failingSince }]);
    const [mail] = mailedTo(org.admin);
    expect(mail!.subject).toBe(`A webhook endpoint of ${org.name} is failing`);
    expect(mail!.text).toContain(
      `The webhook endpoint "Billing sync" of the organization "${org.name}"`,
    );
    expect(mail!.text).toContain(`has failed every delivery since ${failingSince.toISOString()}.`);
    expect(mail!.text).toContain(`sending to ${new URL(endpoint.url).host}\n`);
    const disableAt = new Date(failingSince.getTime() + 5 * 86_400_000).toISOString();
    expect(mail!.text).toContain(`If no delivery succeeds by\n${disableAt}, gw disables`);
    expect(mail!.text).toContain(`\n${PUBLIC_ORIGIN}/dashboard/orgs/${org.id}/webhooks\n`);
    expectNothingSecret(mail!.raw, endpoint);
    await db.query('DELETE FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
  }, 60_000);
});

describe('without SMTP_URL', () => {
  let gateway: GatewayProcess;
  beforeAll(async () => {
    gateway = await startGateway(env);
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  it('an endpoint is disabled as before, and nothing is mailed or queued', async () => {
    const org = await newOrg('quiet');
    const endpoint = await addEndpoint(org, 'quiet', 'No mail here');
    receiver.behave(endpoint.path, () => ({ status: 410 }));
    const mailsBefore = catcher.mails.length;
    await sendTest(org, endpoint.id);
    expect(await waitDisabled(endpoint.id)).toBe('gone');
    expect(await outboxRows()).toBe(0);
    const { rows } = await db.query(
      'SELECT disable_notice_at FROM webhook_endpoints WHERE id = $1',
      [endpoint.id],
    );
    expect(rows).toEqual([{ disable_notice_at: null }]);
    expect(catcher.mails).toHaveLength(mailsBefore);
  }, 60_000);
});

describe('two dispatchers failing on one endpoint at once', () => {
  // A gateway that only sends mail (no dispatcher): the two dispatchers below, each on a pool
  // of its own as two instances would be, are the only ones delivering.
  let sender: GatewayProcess;
  const dispatchers: Array<{ dispatcher: WebhookDispatcher; pool: DbPool }> = [];
  beforeAll(async () => {
    sender = await startGateway(
      { ...mailingEnv(), WEBHOOK_DELIVERY_CONCURRENCY: '0' },
      { emailSenderTiming: SENDER_TIMING },
    );
  });
  afterAll(async () => {
    for (const { dispatcher, pool: own } of dispatchers.splice(0)) {
      await dispatcher.stop();
      await own.end();
    }
    await sender?.stop();
  });

  it('queue one notice per owner and admin', async () => {
    const org = await newOrg('race');
    const endpoint = await addEndpoint(org, 'race', 'Raced');
    // Two subjects on two lanes: one attempt each, at once.
    const subjects: string[] = [];
    const lanes = new Set<number>();
    for (let n = 0; subjects.length < 2; n += 1) {
      const subject = `key_race_${n}`;
      const { rows } = await db.query<{ lane: number }>('SELECT gw_webhook_lane($1) AS lane', [
        subject,
      ]);
      if (!lanes.has(rows[0]!.lane)) {
        lanes.add(rows[0]!.lane);
        subjects.push(subject);
      }
    }
    // Both attempts are answered 410 only once both have arrived: both are recorded together.
    let arrived = 0;
    let release!: () => void;
    const bothArrived = new Promise<void>((resolve) => (release = resolve));
    receiver.behave(endpoint.path, () => {
      arrived += 1;
      if (arrived === 2) release();
      return { status: 410, heldUntil: bothArrived };
    });
    await emitEvents(
      db,
      subjects.map((subject) => ({
        orgId: org.id,
        type: 'api_key.created' as const,
        data: { id: subject },
      })),
    );
    const clients: DeliveryClient[] = [];
    for (let n = 0; n < 2; n += 1) {
      const own = createDbPool(env.DATABASE_URL!, 2);
      const client = new DeliveryClient(settings.policy, Number(env.WEBHOOK_TIMEOUT_MS));
      clients.push(client);
      // Each instance queues in the one outbox; the mail-only gateway's sender sends it.
      const outbox = new MailOutbox(box!, () => undefined);
      const dispatcher = new WebhookDispatcher(
        own,
        client,
        box,
        {
          concurrency: 1,
          retryScheduleS: parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE!),
          disableAfterMs: 5 * 86_400_000,
          pollIntervalMs: Number(env.WEBHOOK_POLL_INTERVAL_MS),
        },
        createLogger('silent'),
        undefined,
        new EndpointNoticeMail(outbox, {
          origin: PUBLIC_ORIGIN,
          disableAfterMs: 5 * 86_400_000,
          retentionDays: 45,
        }),
      );
      dispatchers.push({ dispatcher, pool: own });
      dispatcher.start();
    }
    expect(await waitDisabled(endpoint.id)).toBe('gone');
    // Both attempts were made and recorded (one by each dispatcher: each holds one at a time).
    await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_attempts a
           JOIN webhook_deliveries d ON d.id = a.delivery_id
          WHERE d.endpoint_id = $1 AND a.status_code = 410`,
        [endpoint.id],
      );
      return rows[0]!.n === 2 ? true : undefined;
    });
    expect(arrived).toBe(2);
    await catcher.nth(org.owner, 1, 30_000);
    await catcher.nth(org.admin, 1, 30_000);
    await outboxEmpty();
    expectOnlyAdminsMailed(org);
    const { rows: audit } = await db.query(
      "SELECT user_id FROM dashboard_audit_log WHERE object_id = $1 AND action = 'webhook.disable'",
      [endpoint.id],
    );
    expect(audit).toEqual([{ user_id: 'system' }]);
  }, 60_000);
});

describe('a notice whose reader is no longer an owner or admin when it is sent', () => {
  // Queued while no sender runs (an SMTP server down, say); the members change; then a sender
  // starts.
  let sender: GatewayProcess | undefined;
  afterAll(async () => {
    await sender?.stop();
  });

  it('is dropped, and the other mail to them, and the notices to those who still are, are sent', async () => {
    const org = await newOrg('left');
    const demotedAdmin = `left-demoted-${Math.random().toString(36).slice(2, 8)}@example.com`;
    await createUser(pool, {
      email: demotedAdmin,
      password: 'correct horse battery staple',
      membership: { orgId: org.id, role: 'admin', actor: { userId: 'test' } },
    });
    const endpoint = await addEndpoint(org, 'left', 'Left behind');
    const outbox = new MailOutbox(box!, () => undefined);
    const notices = new EndpointNoticeMail(outbox, {
      origin: PUBLIC_ORIGIN,
      disableAfterMs: 5 * 86_400_000,
      retentionDays: 45,
    });
    const queued = await withTransaction(pool, async (client) => {
      await client.query(
        `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'gone',
                disabled_at = now() WHERE id = $1`,
        [endpoint.id],
      );
      return notices.queue(client, (await findEndpoint(client, org.id, endpoint.id))!, 'gone');
    });
    expect(queued).toBe(3);
    // Mail to the admin's address for itself, queued as well: sent whatever their memberships.
    await new AccountMail(outbox, PUBLIC_ORIGIN).sendSignupNotice(pool, org.admin);

    // Meanwhile the admin is removed from the organization and the other admin made a member.
    const idOf = async (email: string): Promise<string> => {
      const { rows } = await db.query<{ id: string }>(
        'SELECT id FROM dashboard_users WHERE email = $1',
        [email],
      );
      return rows[0]!.id;
    };
    const apiKeys = new ApiKeyStore(pool, context.redis, createRedisKeys(prefix), 30_000);
    const owner = { userId: await idOf(org.owner), role: 'owner' as const };
    await removeMember(pool, apiKeys, owner, org.id, await idOf(org.admin));
    await changeRole(pool, apiKeys, owner, org.id, await idOf(demotedAdmin), 'member');

    sender = await startGateway(
      { ...mailingEnv(), WEBHOOK_DELIVERY_CONCURRENCY: '0' },
      { emailSenderTiming: SENDER_TIMING },
    );
    await catcher.nth(org.owner, 1, 30_000);
    await catcher.nth(org.admin, 1, 30_000);
    await outboxEmpty();
    expect(mailedTo(org.owner).map((mail) => mail.subject)).toEqual([
      `A webhook endpoint of ${org.name} was disabled`,
    ]);
    expect(mailedTo(org.admin).map((mail) => mail.subject)).toEqual([
      'Someone tried to sign up to the gw dashboard with your address',
    ]);
    expect(mailedTo(demotedAdmin)).toEqual([]);
  }, 60_000);
});
