// Webhooks under concurrency, across gateway instances sharing Redis and Postgres: thresholds
// fire once per period whatever the number of requests and instances crossing them together,
// and no two instances ever send one delivery at the same time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatNano, numericToNano } from '../src/money.js';
import { emitEvents } from '../src/webhooks/outbox.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson } from './support/http.js';
import {
  type GatewayProcess,
  runCliJson,
  seed,
  setProductUserCap,
  startGateway,
} from './support/processes.js';
import { eventually } from './support/services.js';
import { WebhookReceiver, webhookEnv, type ReceivedMessage } from './support/webhook-receiver.js';

const { prefix, db } = isolatedContext('wh-race');
const env = webhookEnv(prefix);
const receiver = new WebhookReceiver();
let gateways: GatewayProcess[];

async function addEndpoint(orgId: string, path: string): Promise<string> {
  const added = await runCliJson<{ id: string; secret: string }>(
    ['webhook', 'add', '--org-id', orgId, '--url', receiver.endpoint(path)],
    env,
  );
  receiver.setSecrets(path, [added.secret]);
  return added.id;
}

function chat(gateway: GatewayProcess, apiKey: string, user: string) {
  return postJson(
    `${gateway.url}/v1/chat/completions`,
    {
      model: 'vendor_b/gpt-4o-mini',
      messages: [{ role: 'user', content: 'hello there' }],
      max_tokens: 16,
    },
    { ...bearer(apiKey), 'x-gw-external-user-id': user },
  );
}

/** Waits for the messages, then a while longer: nothing more may come. */
async function finalMessages(path: string, count: number): Promise<ReceivedMessage[]> {
  await eventually(
    async () => (receiver.messages(path).length >= count ? true : undefined),
    30_000,
  );
  await new Promise((resolve) => setTimeout(resolve, 1500));
  return receiver.messages(path);
}

const summary = (messages: readonly ReceivedMessage[]): string[] =>
  messages
    .map(({ payload: { type, data } }) =>
      [type, data.scope ?? data.external_user_id ?? '', data.threshold ?? ''].join(' '),
    )
    .sort();

beforeAll(async () => {
  await receiver.start();
  gateways = await Promise.all([startGateway(env), startGateway(env), startGateway(env)]);
});

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  await db.query('DELETE FROM webhook_endpoints WHERE url LIKE $1', [`${receiver.url}%`]);
  await receiver.stop();
});

afterAll(() => {
  expect(receiver.unverified).toEqual([]);
});

describe('thresholds', () => {
  it('fire once per period under 100 concurrent requests across 3 instances', async () => {
    const [users, spenders, calibration] = await Promise.all([
      seed(env),
      seed(env, ['--wallet', '50.00']),
      seed(env),
    ]);
    // What one request costs (the mock vendor's usage is deterministic).
    const probe = await chat(gateways[0]!, calibration.api_key, 'probe');
    expect(probe.status).toBe(200);
    const { sell_cost: sellCost } = await eventually(async () => {
      const { rows } = await db.query<{ sell_cost: string }>(
        'SELECT sell_cost::text FROM usage_records WHERE request_id = $1::uuid',
        [probe.headers.get('x-request-id')],
      );
      return rows[0];
    });
    const unit = numericToNano(sellCost);
    const amount = (units: bigint) => formatNano(unit * units);

    await addEndpoint(users.org_id, '/users');
    await addEndpoint(spenders.org_id, '/spenders');
    // One product user capped at 20 requests; an org capped at 30, its connection at 35, its
    // wallet funded for 100 with an alert below 75.
    await setProductUserCap(env, users.app_id, 'racer', amount(20n));
    await runCliJson(
      ['cap', 'set', '--scope', 'org', '--org-id', spenders.org_id, '--amount', amount(30n)],
      env,
    );
    await runCliJson(
      [
        'cap',
        'set',
        '--scope',
        'app_connection',
        '--app-connection-id',
        spenders.app_connection_id,
        '--amount',
        amount(35n),
      ],
      env,
    );
    await runCliJson(['wallet', 'set', '--org-id', spenders.org_id, '--amount', amount(100n)], env);
    await runCliJson(
      ['wallet', 'alert', '--org-id', spenders.org_id, '--low-balance-threshold', amount(75n)],
      env,
    );
    // Only threshold and wallet events count below: the CLI created 'racer' already.
    await receiver.waitFor('/users', 'product_user.created', 1);
    const before = receiver.messages('/users').length;

    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, index) =>
        index % 2 === 0
          ? chat(gateways[index % 3]!, users.api_key, 'racer')
          : chat(gateways[index % 3]!, spenders.api_key, `spender-${index}`),
      ),
    );
    const passed = (key: string) =>
      answers.filter(
        (answer, index) =>
          answer.status === 200 && (index % 2 === 0 ? users.api_key : spenders.api_key) === key,
      ).length;
    expect(passed(users.api_key)).toBe(20);
    expect(passed(spenders.api_key)).toBe(30);

    const userEvents = (await finalMessages('/users', before + 2)).slice(before);
    expect(summary(userEvents)).toEqual([
      'product_user.allowance_threshold racer 0.8',
      'product_user.allowance_threshold racer 1',
    ]);
    const spenderEvents = (await finalMessages('/spenders', 50 + 3 + 1)).filter(
      (message) => message.payload.type !== 'product_user.created',
    );
    expect(summary(spenderEvents)).toEqual([
      'cap.threshold app_connection 0.8',
      'cap.threshold org 0.8',
      'cap.threshold org 1',
      'wallet.low_balance  ',
    ]);
    // One message per user (a message received twice is one message sent again: below).
    const created = new Map(
      receiver
        .ofType('/spenders', 'product_user.created')
        .map((message) => [message.id, message.payload.data.external_user_id]),
    );
    expect([...created.values()].sort()).toEqual(
      Array.from({ length: 50 }, (_, index) => `spender-${index * 2 + 1}`).sort(),
    );
    const low = receiver.ofType('/spenders', 'wallet.low_balance')[0]!;
    expect(numericToNano(String(low.payload.data.balance))).toBeLessThan(unit * 75n);
    expect(numericToNano(String(low.payload.data.balance))).toBeGreaterThanOrEqual(unit * 74n);
    // Each message was delivered once, unless an attempt the receiver answered outlasted
    // WEBHOOK_TIMEOUT_MS on a busy machine and was made again (at least once): then the
    // delivery log has that failed attempt.
    const counts = new Map<string, number>();
    for (const { id } of receiver.received) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const [id, times] of counts) {
      if (times === 1) continue;
      const { rows } = await db.query<{ failed: string }>(
        `SELECT count(*) FILTER (WHERE a.status_code IS NULL)::text AS failed
           FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
          WHERE d.message_id = $1`,
        [id],
      );
      expect(
        Number(rows[0]!.failed),
        `message ${id} received ${times} times`,
      ).toBeGreaterThanOrEqual(times - 1);
    }
  }, 90_000);
});

describe('delivery across instances', () => {
  it('two instances never send one delivery at once; an endpoint gets one attempt per lane at a time', async () => {
    const org = await seed(env);
    const paths = ['/slow-a', '/slow-b', '/slow-c', '/slow-d'];
    for (const path of paths) {
      await addEndpoint(org.org_id, path);
      receiver.behave(path, (_message, attempt) => ({
        status: attempt === 1 && Math.random() < 0.3 ? 500 : 200,
        delayMs: 60,
      }));
    }
    await emitEvents(
      db,
      Array.from({ length: 15 }, (_, index) => ({
        orgId: org.org_id,
        type: 'api_key.revoked' as const,
        // Five keys: five subjects, so at most five lanes of each endpoint (decision 317).
        data: { id: `key_${index % 5}`, n: index },
      })),
    );
    for (const path of paths) {
      await eventually(
        async () =>
          new Set(
            receiver
              .messages(path)
              .filter((message) => message.status === 200)
              .map((message) => message.id),
          ).size === 15
            ? true
            : undefined,
        60_000,
      );
      expect(receiver.maxInFlightByPath.get(path)).toBeLessThanOrEqual(5);
      // A message answered 200 was never sent again.
      const delivered = receiver.messages(path).filter((message) => message.status === 200);
      expect(delivered).toHaveLength(15);
    }
    expect([...receiver.overlappingIds]).toEqual([]);
    // Every attempt the receiver saw is in the delivery log, once.
    const received = paths.reduce((sum, path) => sum + receiver.messages(path).length, 0);
    await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_attempts a
           JOIN webhook_deliveries d ON d.id = a.delivery_id
           JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.org_id = $1`,
        [org.org_id],
      );
      return rows[0]!.n === received ? true : undefined;
    });
  }, 90_000);
});
