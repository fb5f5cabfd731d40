// An instance that cannot sign a message (no CREDENTIALS_MASTER_KEY, or not the key the
// endpoint's secret is sealed under) leaves it to the instances that can: it does not claim
// it, so the message is neither delayed nor charged a retry, and the endpoint's health is
// untouched (decisions 506, 547). A database of its own: the file's gateways are the only
// dispatchers of its messages.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';
import { TEST_MASTER_KEY } from './support/env.js';
import { WebhookReceiver, webhookEnv } from './support/webhook-receiver.js';

const context = isolatedContext('wh-unsigned', { ownDatabase: true });
const { prefix, db } = context;
const env = { ...webhookEnv(prefix), DATABASE_URL: context.env.DATABASE_URL! };
/** A second master key: an instance given only it cannot open what the first sealed. */
const SECOND_KEY = Buffer.alloc(32, 9).toString('base64');
/** A rotation's step 1 done: the second key current, the first one previous. */
const rotatedEnv = {
  ...env,
  CREDENTIALS_MASTER_KEY: SECOND_KEY,
  CREDENTIALS_MASTER_KEY_ID: 'test-k2',
  CREDENTIALS_PREVIOUS_KEYS: `test-k1:${TEST_MASTER_KEY}`,
};
const receiver = new WebhookReceiver();
let org: SeededOrg;
const gateways: GatewayProcess[] = [];

beforeAll(async () => {
  await receiver.start();
  org = await seed(env);
});

afterEach(async () => {
  for (const gateway of gateways.splice(0)) await gateway.stop();
});

afterAll(async () => {
  await db.query('DELETE FROM webhook_endpoints WHERE org_id = $1', [org.org_id]);
  await receiver.stop();
  expect(receiver.unverified).toEqual([]);
});

async function addEndpoint(path: string, cliEnv: Record<string, string>): Promise<string> {
  const added = await runCliJson<{ id: string; secret: string }>(
    ['webhook', 'add', '--org-id', org.org_id, '--url', receiver.endpoint(path)],
    cliEnv,
  );
  receiver.setSecrets(path, [added.secret]);
  return added.id;
}

async function sendTest(endpointId: string): Promise<string> {
  const { message_id } = await runCliJson<{ message_id: string }>(
    ['webhook', 'test', '--id', endpointId],
    env,
  );
  return message_id;
}

async function delivery(messageId: string) {
  const { rows } = await db.query<{
    state: string;
    retry_step: number;
    attempt_count: number;
    due: boolean;
    attempts: Array<{ status_code: number | null; error: string | null }>;
  }>(
    `SELECT d.state, d.retry_step, d.attempt_count, d.next_attempt_at <= now() AS due,
            COALESCE((SELECT json_agg(json_build_object('status_code', a.status_code, 'error', a.error)
                               ORDER BY a.id)
                        FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]') AS attempts
       FROM webhook_deliveries d WHERE d.message_id = $1`,
    [messageId],
  );
  return rows[0];
}

async function start(gatewayEnv: Record<string, string>): Promise<GatewayProcess> {
  const gateway = await startGateway(gatewayEnv);
  gateways.push(gateway);
  return gateway;
}

describe('an instance that cannot sign', () => {
  it('without CREDENTIALS_MASTER_KEY claims nothing: the message goes at its first attempt to one that has it', async () => {
    const id = await addEndpoint('/unsigned', env);
    // The endpoint has been failing for days: one more failure would disable it.
    await db.query(
      "UPDATE webhook_endpoint_states SET failing_since = now() - interval '6 days' WHERE endpoint_id = $1",
      [id],
    );
    const keyless = await start({ ...env, CREDENTIALS_MASTER_KEY: '' });
    const messageId = await sendTest(id);

    await start(env);
    const [received] = await receiver.waitFor('/unsigned', 'webhook.test', 1);
    expect(received!.id).toBe(messageId);
    expect(received!.attempt).toBe(1);
    const delivered = await eventually(async () => {
      const row = await delivery(messageId);
      return row?.state === 'delivered' ? row : undefined;
    });
    // No "not sent" in the log: the keyless instance never held the message.
    expect(delivered).toEqual({
      state: 'delivered',
      retry_step: 0,
      attempt_count: 1,
      due: true,
      attempts: [{ status_code: 200, error: null }],
    });
    const { rows: endpoints } = await db.query(
      `SELECT e.status, s.failing_since FROM webhook_endpoints e
         JOIN webhook_endpoint_states s ON s.endpoint_id = e.id WHERE e.id = $1`,
      [id],
    );
    expect(endpoints).toEqual([{ status: 'enabled', failing_since: null }]);
    // Its operator is told at start-up.
    expect(keyless.output()).toContain(
      'CREDENTIALS_MASTER_KEY is not set: this instance delivers no webhooks',
    );
  });

  it('without the key an endpoint is sealed under leaves that endpoint to the others, and sends the rest', async () => {
    // Sealed under the first key (as this instance has it), and under the second (the
    // instances a rotation's step 1 reached).
    const readable = await addEndpoint('/old-key', env);
    const unreadable = await addEndpoint('/new-key', rotatedEnv);
    // Its current secret under the first key, the one it replaced (still signing for a day)
    // under the second: this instance cannot sign all that signs it.
    const rotated = await addEndpoint('/rotated', rotatedEnv);
    const rotation = await runCliJson<{ secret: string }>(
      ['webhook', 'rotate-secret', '--id', rotated],
      env,
    );
    receiver.setSecrets('/rotated', [rotation.secret]);
    const waiting = await sendTest(unreadable);
    const waitingToo = await sendTest(rotated);
    const sent = await sendTest(readable);

    await start(env);
    // This instance sent the message it can sign, after the other became due.
    await eventually(async () =>
      (await delivery(sent))?.state === 'delivered' ? true : undefined,
    );
    expect(await delivery(waiting)).toEqual({
      state: 'pending',
      retry_step: 0,
      attempt_count: 0,
      due: true,
      attempts: [],
    });
    expect(await delivery(waitingToo)).toEqual(await delivery(waiting));
    expect(receiver.messages('/new-key')).toEqual([]);
    expect(receiver.messages('/rotated')).toEqual([]);

    // An instance with the second key sends it, at its first attempt.
    await start(rotatedEnv);
    const [received] = await receiver.waitFor('/new-key', 'webhook.test', 1);
    expect(received!.id).toBe(waiting);
    expect(received!.attempt).toBe(1);
    const [alsoReceived] = await receiver.waitFor('/rotated', 'webhook.test', 1);
    expect(alsoReceived!.id).toBe(waitingToo);
    expect(alsoReceived!.attempt).toBe(1);
  });
});
