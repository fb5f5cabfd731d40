// A receiver that takes the whole WEBHOOK_TIMEOUT_MS to answer, at the largest time-out the
// configuration accepts (60 s). The attempt's transaction (it holds the endpoint) is idle on
// the server for that long: it must outlive the attempt, or Postgres ends it just before the
// attempt is recorded. Unrecorded, the delivery is still pending, due at once, with no retry
// step taken: the schedule never advances, the delivery never fails and the endpoint is never
// disabled, however long the receiver keeps timing out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvents } from '../src/webhooks/outbox.js';
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

const TIMEOUT_MS = 60_000;
const { prefix, db } = isolatedContext('wh-slow');
const env = { ...webhookEnv(prefix), WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) };
const receiver = new WebhookReceiver();
let gateway: GatewayProcess;
let org: SeededOrg;

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

describe('a receiver slower than the attempt time-out of 60 s', () => {
  it('has its timed-out attempt recorded and its retry scheduled', async () => {
    const path = '/slow';
    // Past the attempt's time-out: the dispatcher gives up on it at 60 s.
    receiver.behave(path, () => ({ status: 200, delayMs: TIMEOUT_MS + 5_000 }));
    const added = await runCliJson<{ id: string; secret: string }>(
      ['webhook', 'add', '--org-id', org.org_id, '--url', receiver.endpoint(path)],
      env,
    );
    receiver.setSecrets(path, [added.secret]);
    await emitEvents(db, [{ orgId: org.org_id, type: 'wallet.low_balance', data: { n: 1 } }]);
    await receiver.waitFor(path, 'wallet.low_balance');

    const attempts = await eventually(
      async () => {
        const { rows } = await db.query<{ error: string | null }>(
          `SELECT a.error FROM webhook_attempts a
             JOIN webhook_deliveries d ON d.id = a.delivery_id
            WHERE d.endpoint_id = $1`,
          [added.id],
        );
        return rows.length > 0 ? rows : undefined;
      },
      TIMEOUT_MS + 15_000,
      250,
    );
    expect(attempts).toEqual([{ error: `timeout: no answer within ${TIMEOUT_MS} ms` }]);
    const { rows } = await db.query(
      'SELECT state, attempt_count, retry_step FROM webhook_deliveries WHERE endpoint_id = $1',
      [added.id],
    );
    expect(rows).toEqual([{ state: 'pending', attempt_count: 1, retry_step: 1 }]);
  }, 120_000);
});
