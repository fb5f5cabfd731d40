// An instance that cannot sign a message (no CREDENTIALS_MASTER_KEY, or not the key the
// endpoint's secret is sealed under) sends nothing: that is no failure of the receiver. The
// attempt is in the delivery log with why, and the message waits for an instance that can
// sign it, its retries and the endpoint's health untouched (decision 506). A database of its
// own: the file's gateways are the only dispatchers of its messages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';
import { WebhookReceiver, webhookEnv } from './support/webhook-receiver.js';

const context = isolatedContext('wh-unsigned', { ownDatabase: true });
const { prefix, db } = context;
const env = { ...webhookEnv(prefix), DATABASE_URL: context.env.DATABASE_URL! };
const receiver = new WebhookReceiver();
let org: SeededOrg;
let gateway: GatewayProcess | undefined;

beforeAll(async () => {
  await receiver.start();
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop();
  await db.query('DELETE FROM webhook_endpoints WHERE org_id = $1', [org.org_id]);
  await receiver.stop();
  expect(receiver.unverified).toEqual([]);
});

describe('an instance that cannot sign', () => {
  it('sends nothing, burns no retry and does not fail the endpoint; one that can sends the message', async () => {
    const added = await runCliJson<{ id: string; secret: string }>(
      ['webhook', 'add', '--org-id', org.org_id, '--url', receiver.endpoint('/unsigned')],
      env,
    );
    receiver.setSecrets('/unsigned', [added.secret]);
    // The endpoint has been failing for days: one more failure would disable it.
    await db.query(
      "UPDATE webhook_endpoint_states SET failing_since = now() - interval '6 days' WHERE endpoint_id = $1",
      [added.id],
    );
    const { message_id: id } = await runCliJson<{ message_id: string }>(
      ['webhook', 'test', '--id', added.id],
      env,
    );

    gateway = await startGateway({ ...env, CREDENTIALS_MASTER_KEY: '' });
    const attempt = await eventually(async () => {
      const { rows } = await db.query<{ status_code: number | null; error: string | null }>(
        `SELECT a.status_code, a.error FROM webhook_attempts a
           JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.message_id = $1`,
        [id],
      );
      return rows[0];
    });
    expect(attempt).toEqual({
      status_code: null,
      error: 'not sent: CREDENTIALS_MASTER_KEY is not set on this instance',
    });
    await gateway.stop();
    gateway = undefined;

    const { rows: deliveries } = await db.query(
      'SELECT state, retry_step FROM webhook_deliveries WHERE message_id = $1',
      [id],
    );
    expect(deliveries).toEqual([{ state: 'pending', retry_step: 0 }]);
    const { rows: endpoints } = await db.query(
      `SELECT e.status, e.disabled_reason FROM webhook_endpoints e WHERE e.id = $1`,
      [added.id],
    );
    expect(endpoints).toEqual([{ status: 'enabled', disabled_reason: null }]);
    expect(receiver.messages('/unsigned')).toEqual([]);

    // An instance with the key sends it (its wait is the schedule's first step: made due here).
    await db.query('UPDATE webhook_deliveries SET next_attempt_at = now() WHERE message_id = $1', [
      id,
    ]);
    gateway = await startGateway(env);
    const [received] = await receiver.waitFor('/unsigned', 'webhook.test', 1);
    expect(received!.id).toBe(id);
  });
});
