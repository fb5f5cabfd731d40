// A gateway process killed with SIGKILL between a change and its webhook's delivery loses
// nothing: the event was committed with the change (or sits in the usage stream with the spend
// it derives from), and another instance delivers it, with the same webhook-id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatNano, numericToNano } from '../src/money.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson } from './support/http.js';
import {
  runCliJson,
  seed,
  startGatewayProcess,
  type SeededOrg,
  type SpawnedGateway,
} from './support/processes.js';
import { eventually } from './support/services.js';
import { WebhookReceiver, webhookEnv } from './support/webhook-receiver.js';

const { prefix, db } = isolatedContext('wh-crash');
const env = { ...webhookEnv(prefix), USAGE_CLAIM_IDLE_MS: '1000' };
const receiver = new WebhookReceiver();
const started: SpawnedGateway[] = [];
let org: SeededOrg;

async function gatewayProcess(extra: Record<string, string> = {}): Promise<SpawnedGateway> {
  const gateway = await startGatewayProcess({ ...env, ...extra });
  started.push(gateway);
  return gateway;
}

beforeAll(async () => {
  await receiver.start();
  org = await seed(env);
  const added = await runCliJson<{ id: string; secret: string }>(
    ['webhook', 'add', '--org-id', org.org_id, '--url', receiver.endpoint('/crash')],
    env,
  );
  receiver.setSecrets('/crash', [added.secret]);
});

afterAll(async () => {
  await Promise.all(started.map((gateway) => gateway.stop('SIGKILL')));
  await db.query('DELETE FROM webhook_endpoints WHERE url LIKE $1', [`${receiver.url}%`]);
  await receiver.stop();
});

afterAll(() => {
  expect(receiver.unverified).toEqual([]);
});

describe('kill -9', () => {
  it('an instance killed in the middle of an attempt: another delivers the message, same webhook-id', async () => {
    // The first attempt hangs until the instance that made it is gone.
    receiver.behave('/crash', (_message, attempt) =>
      attempt === 1 ? { status: 200, delayMs: 60_000 } : { status: 200 },
    );
    const first = await gatewayProcess();
    const put = await fetch(`${first.url}/product-users/by-external-id`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...bearer(org.service_key) },
      body: JSON.stringify({ app_id: org.app_id, external_user_id: 'survivor' }),
    });
    expect(put.status).toBe(201);
    const [hanging] = await receiver.waitFor('/crash', 'product_user.created');
    expect(await first.stop('SIGKILL')).toBeNull();
    const killedAt = (await db.query<{ now: Date }>('SELECT now()')).rows[0]!.now;

    const second = await gatewayProcess();
    const delivered = await eventually(async () => {
      const again = receiver
        .ofType('/crash', 'product_user.created')
        .filter((message) => message.id === hanging!.id && message.attempt === 2);
      return again.length > 0 ? again : undefined;
    }, 20_000);
    expect(delivered[0]!.body).toBe(hanging!.body);
    expect(delivered[0]!.payload.data.external_user_id).toBe('survivor');
    // The killed instance's attempt never committed: the attempts recorded are the survivor's
    // (one, unless the busy machine made its first outlast WEBHOOK_TIMEOUT_MS: at least once).
    // Other test files' gateways deliver any org's messages too (decision 177): when one of them
    // made the hanging first attempt instead, it was recorded as a time-out before the kill.
    const rows = await eventually(async () => {
      const { rows: found } = await db.query<{ state: string; attempt_count: number }>(
        'SELECT state, attempt_count FROM webhook_deliveries WHERE message_id = $1',
        [hanging!.id],
      );
      return found[0]?.state === 'delivered' ? found : undefined;
    });
    const { rows: attempts } = await db.query<{ after_kill: boolean; timed_out: boolean }>(
      `SELECT a.attempted_at > $2 AS after_kill,
              (a.status_code IS NULL AND a.error LIKE 'timeout%') AS timed_out
         FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE d.message_id = $1`,
      [hanging!.id, killedAt],
    );
    expect(attempts.length).toBeGreaterThanOrEqual(1);
    expect(attempts.every((attempt) => attempt.after_kill || attempt.timed_out)).toBe(true);
    expect(attempts.some((attempt) => attempt.after_kill)).toBe(true);
    expect(rows).toEqual([{ state: 'delivered', attempt_count: attempts.length }]);
    await second.stop('SIGKILL');
  }, 60_000);

  it('an instance killed right after the requests that crossed a threshold: the event still comes', async () => {
    receiver.behave('/crash', () => ({ status: 200 }));
    // An instance that delivers nothing and dies right after answering: its usage may still be
    // in Redis, its writer never ran, or ran halfway.
    const doomed = await gatewayProcess({ WEBHOOK_DELIVERY_CONCURRENCY: '0' });
    const chat = () =>
      postJson(
        `${doomed.url}/v1/chat/completions`,
        {
          model: 'vendor_b/gpt-4o-mini',
          messages: [{ role: 'user', content: 'hello there' }],
          max_tokens: 16,
        },
        { ...bearer(org.api_key), 'x-gw-external-user-id': 'threshold-user' },
      );
    const probe = await chat();
    const { sell_cost: sellCost } = await eventually(async () => {
      const { rows } = await db.query<{ sell_cost: string }>(
        'SELECT sell_cost::text FROM usage_records WHERE request_id = $1::uuid',
        [probe.headers.get('x-request-id')],
      );
      return rows[0];
    });
    const unit = numericToNano(sellCost);
    await runCliJson(
      ['cap', 'set', '--scope', 'org', '--org-id', org.org_id, '--amount', formatNano(unit * 3n)],
      env,
    );
    const answers = await Promise.all([chat(), chat()]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(await doomed.stop('SIGKILL')).toBeNull();
    expect(receiver.ofType('/crash', 'cap.threshold')).toEqual([]);

    await gatewayProcess();
    const marks = await receiver.waitFor('/crash', 'cap.threshold', 2, 30_000);
    expect(marks.map((message) => message.payload.data.threshold).sort()).toEqual([0.8, 1]);
    expect(marks[0]!.payload.data).toMatchObject({ scope: 'org', org_id: org.org_id });
  }, 60_000);
});
