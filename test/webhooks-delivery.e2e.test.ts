// How webhooks are delivered: retries with the same webhook-id until a 2xx, a subject's
// messages in creation order while the endpoint is healthy, a schedule that ends, endpoints disabled by a 410 or by days of
// failures, no redirects followed, bounded reads and timeouts, secret rotation with both
// secrets signing, redelivery and the delivery log. Every signature is verified with
// `standardwebhooks` by the receiver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { emitEvents } from '../src/webhooks/outbox.js';
import { isolatedContext } from './support/context.js';
import {
  runCli,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';
import { WebhookReceiver, webhookEnv } from './support/webhook-receiver.js';

// A database of its own: no other file's dispatcher delivers its messages, nor its own
// another's, so its retries may follow a schedule of its own rather than every webhook test
// gateway's (webhookEnv). The first retry comes after 1 s, as there; the later ones after
// 0.2 s, so that a schedule of ten steps is spent in 3 s, not 10.
const context = isolatedContext('wh-delivery', { ownDatabase: true });
const { prefix, db } = context;
const RETRY_SCHEDULE_S = [1, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2];
const env = {
  ...webhookEnv(prefix),
  DATABASE_URL: context.env.DATABASE_URL!,
  WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE_S.join(','),
};
const receiver = new WebhookReceiver();
let gateway: GatewayProcess;
let org: SeededOrg;

interface DeliveryLog {
  data: Array<{
    id: string;
    message_id: string;
    event_type: string;
    status: string;
    attempt_count: number;
    payload: Record<string, unknown>;
    attempts: Array<{
      status_code: number | null;
      latency_ms: number;
      response_snippet: string;
      error: string | null;
    }>;
  }>;
  next_cursor: string | null;
}

async function addEndpoint(path: string): Promise<{ id: string; secret: string }> {
  const added = await runCliJson<{ id: string; secret: string }>(
    ['webhook', 'add', '--org-id', org.org_id, '--url', receiver.endpoint(path)],
    env,
  );
  receiver.setSecrets(path, [added.secret]);
  return added;
}

const sendTest = (id: string) =>
  runCliJson<{ message_id: string }>(['webhook', 'test', '--id', id], env);

const deliveries = (id: string) =>
  runCliJson<DeliveryLog>(['webhook', 'deliveries', '--id', id, '--limit', '50'], env);

async function endpointRow(id: string) {
  const { rows } = await db.query<{ status: string; disabled_reason: string | null }>(
    'SELECT status, disabled_reason FROM webhook_endpoints WHERE id = $1',
    [id],
  );
  return rows[0];
}

beforeAll(async () => {
  await receiver.start();
  gateway = await startGateway(env);
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop();
  await db.query('DELETE FROM webhook_endpoints WHERE url LIKE $1', [`${receiver.url}%`]);
  await receiver.stop();
});

afterAll(() => {
  expect(receiver.unverified).toEqual([]);
});

describe('retries', () => {
  it('a receiver answering 500 for a while, then 200, gets every message, every retry with the same webhook-id and body', async () => {
    const endpoint = await addEndpoint('/flaky');
    receiver.behave('/flaky', (_message, attempt) => ({ status: attempt <= 3 ? 500 : 200 }));
    const sent = await Promise.all([sendTest(endpoint.id), sendTest(endpoint.id)]);
    const ids = sent.map((message) => message.message_id);
    await eventually(async () =>
      ids.every((id) => receiver.messages('/flaky').some((m) => m.id === id && m.status === 200))
        ? true
        : undefined,
    );
    for (const id of ids) {
      const attempts = receiver.messages('/flaky').filter((message) => message.id === id);
      expect(attempts.map((message) => message.status)).toEqual([500, 500, 500, 200]);
      expect(new Set(attempts.map((message) => message.body)).size).toBe(1);
      // Each retry came its step of the schedule after the failure before it (±20% jitter):
      // 1 s, then 0.2 s.
      for (let index = 1; index < attempts.length; index += 1) {
        const gap = attempts[index]!.receivedAtMs - attempts[index - 1]!.receivedAtMs;
        expect(gap).toBeGreaterThanOrEqual(RETRY_SCHEDULE_S[index - 1]! * 800 - 50);
      }
    }
    const log = await deliveries(endpoint.id);
    for (const id of ids) {
      const delivery = log.data.find((entry) => entry.message_id === id)!;
      expect(delivery).toMatchObject({
        status: 'delivered',
        attempt_count: 4,
        event_type: 'webhook.test',
      });
      expect(delivery.attempts.map((attempt) => attempt.status_code)).toEqual([200, 500, 500, 500]);
      expect(delivery.attempts[0]!.response_snippet).toBe('ok');
      expect(delivery.attempts[0]!.latency_ms).toBeGreaterThanOrEqual(0);
    }
    expect((await endpointRow(endpoint.id))!.status).toBe('enabled');
  });

  it('a retry waits its delay from the failure, not from when the failed attempt began', async () => {
    const endpoint = await addEndpoint('/slow-fail');
    // 600 ms to answer 500, then 200: the retry comes at least 0.8 s (1 s − 20% jitter) after
    // that answer, so at least 1.4 s after the first attempt arrived.
    receiver.behave('/slow-fail', (_message, attempt) =>
      attempt === 1 ? { status: 500, delayMs: 600 } : { status: 200 },
    );
    const { message_id: id } = await sendTest(endpoint.id);
    await eventually(async () =>
      receiver.messages('/slow-fail').some((m) => m.id === id && m.status === 200)
        ? true
        : undefined,
    );
    const [first, retry] = receiver.messages('/slow-fail').filter((message) => message.id === id);
    expect(retry!.receivedAtMs - first!.receivedAtMs).toBeGreaterThanOrEqual(1_400);
  });

  it('a healthy endpoint gets the messages about one subject in the order they were created, one at a time', async () => {
    const endpoint = await addEndpoint('/ordered');
    // One API key's events: one subject, so one lane (decision 317; test/webhooks-lanes.e2e.test.ts
    // has many subjects at once).
    await emitEvents(
      db,
      Array.from({ length: 12 }, (_, index) => ({
        orgId: org.org_id,
        type: 'api_key.created' as const,
        data: { id: 'key_ordered', n: index },
      })),
    );
    const received = await receiver.waitFor('/ordered', 'api_key.created', 12);
    expect(received.map((message) => message.payload.data.n)).toEqual([...Array(12).keys()]);
    expect(receiver.maxInFlightByPath.get('/ordered')).toBe(1);
    await db.query('DELETE FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
  });

  it('a delivery that never succeeds is failed once the schedule is spent', async () => {
    const endpoint = await addEndpoint('/down');
    receiver.behave('/down', () => ({ status: 503, body: 'maintenance' }));
    const { message_id: id } = await sendTest(endpoint.id);
    const log = await eventually(async () => {
      const found = (await deliveries(endpoint.id)).data.find((entry) => entry.message_id === id);
      return found?.status === 'failed' ? found : undefined;
    }, 25_000);
    // The first attempt and one retry per step of the schedule.
    expect(log.attempt_count).toBe(11);
    expect(receiver.messages('/down').filter((message) => message.id === id)).toHaveLength(11);
    expect(log.attempts[0]).toMatchObject({ status_code: 503, response_snippet: 'maintenance' });
  }, 40_000);
});

describe('unhealthy endpoints', () => {
  it('410 disables the endpoint at once; enabling it again delivers what waited', async () => {
    const endpoint = await addEndpoint('/gone');
    receiver.behave('/gone', () => ({ status: 410 }));
    const { message_id: id } = await sendTest(endpoint.id);
    await eventually(async () =>
      (await endpointRow(endpoint.id))?.status === 'disabled' ? true : undefined,
    );
    expect(await endpointRow(endpoint.id)).toEqual({ status: 'disabled', disabled_reason: 'gone' });
    const { rows } = await db.query(
      "SELECT user_id, details FROM dashboard_audit_log WHERE object_id = $1 AND action = 'webhook.disable'",
      [endpoint.id],
    );
    expect(rows).toEqual([{ user_id: 'system', details: { reason: 'gone' } }]);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(receiver.messages('/gone')).toHaveLength(1);

    receiver.behave('/gone', () => ({ status: 204 }));
    const enabled = await runCliJson<Record<string, unknown>>(
      ['webhook', 'enable', '--id', endpoint.id],
      env,
    );
    expect(enabled).toMatchObject({
      status: 'enabled',
      disabled_reason: null,
      failing_since: null,
    });
    await eventually(async () =>
      receiver.messages('/gone').some((message) => message.id === id && message.status === 204)
        ? true
        : undefined,
    );
  });

  it('enabling an endpoint sends what waited now, each message with its schedule from the start', async () => {
    const endpoint = await addEndpoint('/back');
    receiver.behave('/back', () => ({ status: 410 }));
    const { message_id: id } = await sendTest(endpoint.id);
    await eventually(async () =>
      (await endpointRow(endpoint.id))?.status === 'disabled' ? true : undefined,
    );
    // Where it stands after days of failures under the default schedule: its next attempt
    // half a day away, one step left.
    await db.query(
      `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '12 hours', retry_step = 9
        WHERE endpoint_id = $1`,
      [endpoint.id],
    );
    receiver.behave('/back', () => ({ status: 204 }));
    await runCliJson(['webhook', 'enable', '--id', endpoint.id], env);
    const { rows } = await db.query<{ due: boolean; retry_step: number }>(
      `SELECT next_attempt_at <= now() AS due, retry_step FROM webhook_deliveries
        WHERE endpoint_id = $1 AND state = 'pending'`,
      [endpoint.id],
    );
    // Delivered already, or due now from the first step of the schedule.
    expect(rows.every((row) => row.due && row.retry_step === 0)).toBe(true);
    await eventually(async () =>
      receiver.messages('/back').some((message) => message.id === id && message.status === 204)
        ? true
        : undefined,
    );
    const [delivery] = (await deliveries(endpoint.id)).data;
    expect(delivery).toMatchObject({ message_id: id, status: 'delivered', attempt_count: 2 });
  });

  it('enabling an endpoint also sends again what failed for good since it began failing', async () => {
    const endpoint = await addEndpoint('/outage');
    receiver.behave('/outage', () => ({ status: 503 }));
    await emitEvents(db, [
      { orgId: org.org_id, type: 'api_key.created', data: { id: 'key_before_outage' } },
      { orgId: org.org_id, type: 'api_key.created', data: { id: 'key_in_outage' } },
    ]);
    const byKey = async () =>
      new Map(
        (
          await db.query<{ key: string; state: string; attempt_count: number }>(
            `SELECT m.payload::json #>> '{data,id}' AS key, d.state, d.attempt_count
               FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
              WHERE d.endpoint_id = $1`,
            [endpoint.id],
          )
        ).rows.map((row) => [row.key, row]),
      );
    await eventually(async () =>
      [...(await byKey()).values()].every((row) => row.attempt_count > 0) ? true : undefined,
    );
    await runCliJson(['webhook', 'disable', '--id', endpoint.id], env);
    // Failing for 2 days: one message's schedule ran out before that (another failure of the
    // receiver's, or of its own), the other's during it.
    await db.query(
      "UPDATE webhook_endpoint_states SET failing_since = now() - interval '2 days' WHERE endpoint_id = $1",
      [endpoint.id],
    );
    await db.query(
      `UPDATE webhook_deliveries d SET state = 'failed',
              last_attempt_at = now() - CASE m.payload::json #>> '{data,id}'
                WHEN 'key_before_outage' THEN interval '3 days' ELSE interval '1 day' END
         FROM webhook_messages m WHERE m.id = d.message_id AND d.endpoint_id = $1`,
      [endpoint.id],
    );
    receiver.behave('/outage', () => ({ status: 204 }));
    await runCliJson(['webhook', 'enable', '--id', endpoint.id], env);
    expect((await byKey()).get('key_before_outage')!.state).toBe('failed');
    await eventually(async () =>
      (await byKey()).get('key_in_outage')!.state === 'delivered' ? true : undefined,
    );
    const delivered = receiver.messages('/outage').filter((message) => message.status === 204);
    expect(delivered.map((message) => message.payload.data)).toEqual([{ id: 'key_in_outage' }]);
    await db.query('DELETE FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
  });

  it('an endpoint failing for days is disabled (and shows why)', async () => {
    const endpoint = await addEndpoint('/failing');
    receiver.behave('/failing', () => ({ status: 500 }));
    await db.query(
      "UPDATE webhook_endpoint_states SET failing_since = now() - interval '6 days' WHERE endpoint_id = $1",
      [endpoint.id],
    );
    await sendTest(endpoint.id);
    await eventually(async () =>
      (await endpointRow(endpoint.id))?.status === 'disabled' ? true : undefined,
    );
    const [listed] = (
      await runCliJson<{ data: Array<Record<string, unknown>> }>(
        ['webhook', 'list', '--org-id', org.org_id],
        env,
      )
    ).data.filter((view) => view.id === endpoint.id);
    expect(listed).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });
    expect(Date.now() - Date.parse(String(listed!.failing_since))).toBeGreaterThan(5 * 86_400_000);
    expect(JSON.stringify(listed)).not.toContain(endpoint.secret);
  });

  it('a disabled endpoint keeps its messages waiting: enabled again, it gets what happened meanwhile', async () => {
    const down = await addEndpoint('/down-for-days');
    const paused = await addEndpoint('/paused');
    receiver.behave('/down-for-days', () => ({ status: 503 }));
    await db.query(
      "UPDATE webhook_endpoint_states SET failing_since = now() - interval '6 days' WHERE endpoint_id = $1",
      [down.id],
    );
    await sendTest(down.id);
    await eventually(async () =>
      (await endpointRow(down.id))?.status === 'disabled' ? true : undefined,
    );
    expect(await endpointRow(down.id)).toEqual({ status: 'disabled', disabled_reason: 'failing' });
    await runCliJson(['webhook', 'disable', '--id', paused.id], env);

    // Something happens while the receiver is still down, and both endpoints disabled.
    await emitEvents(db, [
      { orgId: org.org_id, type: 'api_key.revoked', data: { id: 'key_while_down' } },
    ]);
    const waiting = async (endpointId: string) =>
      (
        await db.query<{ message_id: string }>(
          `SELECT d.message_id FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
            WHERE d.endpoint_id = $1 AND m.event_type = 'api_key.revoked' AND d.state = 'pending'`,
          [endpointId],
        )
      ).rows;
    expect(await waiting(down.id)).toHaveLength(1);
    expect(await waiting(paused.id)).toHaveLength(1);

    receiver.behave('/down-for-days', () => ({ status: 204 }));
    for (const endpoint of [down, paused]) {
      await runCliJson(['webhook', 'enable', '--id', endpoint.id], env);
    }
    for (const path of ['/down-for-days', '/paused']) {
      const [received] = await receiver.waitFor(path, 'api_key.revoked', 1);
      expect(received!.payload.data).toEqual({ id: 'key_while_down' });
    }
    await db.query('DELETE FROM webhook_endpoints WHERE id = ANY ($1)', [[down.id, paused.id]]);
  });

  it('follows no redirect, reads a small part of a big answer, gives up on a slow one', async () => {
    const endpoint = await addEndpoint('/odd');
    const elsewhere = receiver.endpoint('/elsewhere', [endpoint.secret]);
    receiver.behave('/odd', (_message, attempt) =>
      attempt === 1
        ? { status: 307, headers: { location: elsewhere } }
        : attempt === 2
          ? { status: 200, delayMs: 4000 }
          : { status: 200, body: 'x'.repeat(1_000_000) },
    );
    const { message_id: id } = await sendTest(endpoint.id);
    const delivered = await eventually(async () => {
      const found = (await deliveries(endpoint.id)).data.find((entry) => entry.message_id === id);
      return found?.status === 'delivered' ? found : undefined;
    }, 20_000);
    const [big, slow, redirected] = delivered.attempts;
    expect(redirected).toMatchObject({ status_code: 307, error: null });
    expect(slow).toMatchObject({ status_code: null, error: 'timeout: no answer within 3000 ms' });
    expect(slow!.latency_ms).toBeGreaterThanOrEqual(2900);
    expect(big!.status_code).toBe(200);
    expect(big!.response_snippet).toBe('x'.repeat(1024));
    expect(receiver.messages('/elsewhere')).toEqual([]);
  });
});

describe('secrets', () => {
  it('after a rotation both secrets sign during the grace period, then only the new one', async () => {
    const endpoint = await addEndpoint('/rotating');
    const rotated = await runCliJson<{
      id: string;
      secret: string;
      previous_secret_expires_at: string;
    }>(['webhook', 'rotate-secret', '--id', endpoint.id, '--grace-seconds', '3600'], env);
    expect(rotated.secret).not.toBe(endpoint.secret);
    expect(Date.parse(rotated.previous_secret_expires_at) - Date.now()).toBeGreaterThan(3_500_000);
    receiver.setSecrets('/rotating', [endpoint.secret, rotated.secret]);
    await sendTest(endpoint.id);
    const [both] = await receiver.waitFor('/rotating', 'webhook.test');
    expect(both!.verifiedWith).toEqual([0, 1]);
    expect(both!.signature.split(' ')).toHaveLength(2);

    const again = await runCliJson<{ secret: string; previous_secret_expires_at: null }>(
      ['webhook', 'rotate-secret', '--id', endpoint.id, '--grace-seconds', '0'],
      env,
    );
    expect(again.previous_secret_expires_at).toBeNull();
    receiver.setSecrets('/rotating', [endpoint.secret, rotated.secret, again.secret]);
    await sendTest(endpoint.id);
    const messages = await receiver.waitFor('/rotating', 'webhook.test', 2);
    expect(messages[1]!.verifiedWith).toEqual([2]);
    // The secret is stored sealed, never in the clear.
    const { rows } = await db.query<{ secret_sealed: string }>(
      'SELECT secret_sealed FROM webhook_endpoints WHERE id = $1',
      [endpoint.id],
    );
    expect(rows[0]!.secret_sealed).not.toContain(again.secret.slice(6));
    expect(() =>
      new Webhook(endpoint.secret).verify(messages[1]!.body, {
        'webhook-id': messages[1]!.id,
        'webhook-timestamp': messages[1]!.timestamp,
        'webhook-signature': messages[1]!.signature,
      }),
    ).toThrow();
  });
});

describe('rotating twice within the grace period', () => {
  type Rotated = {
    secret: string;
    previous_secret_expires_at: string | null;
    earlier_secrets_expire_at: string[];
  };
  const rotate = (id: string, grace: string) =>
    runCliJson<Rotated>(['webhook', 'rotate-secret', '--id', id, '--grace-seconds', grace], env);

  it('keeps every earlier secret signing until its own grace ends, at most 3, and 0 ends them all', async () => {
    const endpoint = await addEndpoint('/rotating-twice');
    const first = await rotate(endpoint.id, '3600');
    const second = await rotate(endpoint.id, '600');
    // The secret the first rotation retired keeps its hour; the second one's has 10 minutes.
    expect(Date.parse(second.previous_secret_expires_at!) - Date.now()).toBeLessThanOrEqual(
      600_000,
    );
    expect(second.earlier_secrets_expire_at).toHaveLength(1);
    expect(Date.parse(second.earlier_secrets_expire_at[0]!) - Date.now()).toBeGreaterThan(
      3_000_000,
    );
    receiver.setSecrets('/rotating-twice', [endpoint.secret, first.secret, second.secret]);
    await sendTest(endpoint.id);
    const [signedByAll] = await receiver.waitFor('/rotating-twice', 'webhook.test');
    expect(signedByAll!.signature.split(' ')).toHaveLength(3);
    expect(signedByAll!.verifiedWith).toEqual([0, 1, 2]);

    // A receiver still on the first secret is served until that secret's own grace ends.
    await db.query(
      `UPDATE webhook_endpoints
          SET earlier_secrets = jsonb_set(earlier_secrets, '{0,expires_at}', to_jsonb($2::text))
        WHERE id = $1`,
      [endpoint.id, new Date(Date.now() - 1000).toISOString()],
    );
    await sendTest(endpoint.id);
    const [, afterItsGrace] = await receiver.waitFor('/rotating-twice', 'webhook.test', 2);
    expect(afterItsGrace!.verifiedWith).toEqual([1, 2]);
    expect(afterItsGrace!.signature.split(' ')).toHaveLength(2);

    // At most 3 earlier secrets sign beside the current one: a fourth is refused, nothing changes.
    const third = await rotate(endpoint.id, '600');
    const fourth = await rotate(endpoint.id, '600');
    expect(fourth.earlier_secrets_expire_at).toHaveLength(2);
    const refused = await runCli(
      ['webhook', 'rotate-secret', '--id', endpoint.id, '--grace-seconds', '600'],
      env,
    );
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stderr)).toEqual({
      error: {
        code: 'gw_conflict',
        message: expect.stringContaining('at most 3 earlier secrets sign beside the current one'),
      },
    });
    receiver.setSecrets('/rotating-twice', [
      first.secret,
      second.secret,
      third.secret,
      fourth.secret,
    ]);
    await sendTest(endpoint.id);
    const [, , fourSigned] = await receiver.waitFor('/rotating-twice', 'webhook.test', 3);
    expect(fourSigned!.verifiedWith).toEqual([0, 1, 2, 3]);

    // A rotation without grace (a leaked secret) stops every earlier one at once.
    const clean = await rotate(endpoint.id, '0');
    expect(clean).toMatchObject({
      previous_secret_expires_at: null,
      earlier_secrets_expire_at: [],
    });
    receiver.setSecrets('/rotating-twice', [
      first.secret,
      second.secret,
      third.secret,
      fourth.secret,
      clean.secret,
    ]);
    await sendTest(endpoint.id);
    const [, , , onlyNew] = await receiver.waitFor('/rotating-twice', 'webhook.test', 4);
    expect(onlyNew!.verifiedWith).toEqual([4]);
    expect(onlyNew!.signature.split(' ')).toHaveLength(1);
  });
});

describe('redelivery', () => {
  it('sends one message again, or everything since a time, with the same webhook-id', async () => {
    const endpoint = await addEndpoint('/replay');
    const first = await sendTest(endpoint.id);
    await receiver.waitFor('/replay', 'webhook.test', 1);
    const since = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = await sendTest(endpoint.id);
    const third = await sendTest(endpoint.id);
    await receiver.waitFor('/replay', 'webhook.test', 3);

    expect(
      await runCliJson(
        ['webhook', 'redeliver', '--id', endpoint.id, '--message-id', first.message_id],
        env,
      ),
    ).toEqual({ redelivered: 1 });
    await receiver.waitFor('/replay', 'webhook.test', 4);
    expect(
      await runCliJson(['webhook', 'redeliver', '--id', endpoint.id, '--since', since], env),
    ).toEqual({ redelivered: 2 });
    const all = await receiver.waitFor('/replay', 'webhook.test', 6);
    expect(all.map((message) => message.id)).toEqual([
      first.message_id,
      second.message_id,
      third.message_id,
      first.message_id,
      second.message_id,
      third.message_id,
    ]);
    const unknown = await runCliJson(
      ['webhook', 'redeliver', '--id', endpoint.id, '--message-id', 'msg_nothere'],
      env,
    ).catch((error: Error) => error.message);
    expect(unknown).toContain('gw_not_found');
  });

  it('the CLI answers an organization id that names none gw_not_found, adding nothing', async () => {
    for (const args of [
      ['add', '--org-id', 'org_nosuchorganization', '--url', receiver.endpoint('/nowhere')],
      ['list', '--org-id', 'org_nosuchorganization'],
    ]) {
      const refused = await runCli(['webhook', ...args], env);
      expect(refused.code).toBe(2);
      expect(JSON.parse(refused.stderr)).toEqual({
        error: { code: 'gw_not_found', message: 'no organization org_nosuchorganization' },
      });
    }
    const { rows } = await db.query(
      "SELECT 1 FROM webhook_endpoints WHERE org_id = 'org_nosuchorganization'",
    );
    expect(rows).toEqual([]);
  });

  it('the CLI takes the redelivery time as the dashboard API does: RFC 3339, and nothing else', async () => {
    const endpoint = await addEndpoint('/since');
    for (const since of ['0', '2026', '2026-05-01', 'May 1, 2026', '0000-01-01T00:00:00+23:59']) {
      const refused = await runCli(
        ['webhook', 'redeliver', '--id', endpoint.id, '--since', since],
        env,
      );
      expect(refused.code).toBe(2);
      const { error } = JSON.parse(refused.stderr) as { error: { code: string; message: string } };
      expect(error.code).toBe('gw_invalid_request');
      expect(error.message).toMatch(/^--since: /);
    }
    expect(
      await runCliJson(
        ['webhook', 'redeliver', '--id', endpoint.id, '--since', '2026-05-01T00:00:00+02:00'],
        env,
      ),
    ).toEqual({ redelivered: 0 });
  });

  it('the CLI pages the delivery log and filters it by status, as the dashboard API does', async () => {
    const endpoint = await addEndpoint('/log-pages');
    let failing = '';
    receiver.behave('/log-pages', (message) => ({
      status: message.id === failing ? 500 : 204,
    }));
    failing = (await sendTest(endpoint.id)).message_id;
    const delivered = [(await sendTest(endpoint.id)).message_id];
    delivered.push((await sendTest(endpoint.id)).message_id);
    await eventually(async () => {
      const log = await deliveries(endpoint.id);
      return log.data.every((entry) => entry.status !== 'pending') ? true : undefined;
    });
    const log = (flags: string[]) =>
      runCliJson<DeliveryLog>(['webhook', 'deliveries', '--id', endpoint.id, ...flags], env);
    const first = await log(['--limit', '2']);
    expect(first.data.map((entry) => entry.message_id)).toEqual([delivered[1], delivered[0]]);
    expect(first.next_cursor).not.toBeNull();
    const second = await log(['--limit', '2', '--cursor', first.next_cursor!]);
    expect(second.data.map((entry) => entry.message_id)).toEqual([failing]);
    expect(second.next_cursor).toBeNull();
    const failed = await log(['--status', 'failed']);
    expect(failed.data.map((entry) => [entry.message_id, entry.status])).toEqual([
      [failing, 'failed'],
    ]);
    const refused = await runCli(
      ['webhook', 'deliveries', '--id', endpoint.id, '--status', 'lost', '--cursor', 'x1'],
      env,
    );
    expect(refused.code).toBe(2);
    const { error } = JSON.parse(refused.stderr) as { error: { code: string; message: string } };
    expect(error.code).toBe('gw_invalid_request');
    expect(error.message).toContain('--status: ');
    expect(error.message).toContain('--cursor: is not a cursor this API issued');
  });
});
