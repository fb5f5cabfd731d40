// The webhook dispatcher's Postgres connections cut off without a reset (a partition, a primary
// replaced under its address): no answer ever comes on them and nothing tells the client. Its
// statements are bounded by DATABASE_TIMEOUT_MS (decision 407), so it gives up on the stranded
// claim, claims again on a new connection and delivers what came due meanwhile, once; unbounded,
// its claim waited until TCP gave up and this instance delivered nothing more.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { relayedTestDatabase, type FreezableRelay } from './support/freezable-relay.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';
import { WebhookReceiver, webhookEnv } from './support/webhook-receiver.js';

// A database of its own: no other file's dispatcher delivers this file's messages.
const context = isolatedContext('wh-strand', { ownDatabase: true });
const env = { ...webhookEnv(context.prefix), DATABASE_URL: context.env.DATABASE_URL! };
const DATABASE_TIMEOUT_MS = 1_000;
const receiver = new WebhookReceiver();
let relay: FreezableRelay;
let gateway: GatewayProcess;
let org: SeededOrg;

beforeAll(async () => {
  await receiver.start();
  org = await seed(env);
  const relayed = await relayedTestDatabase(context.env.DATABASE_URL);
  relay = relayed.relay;
  gateway = await startGateway({
    ...env,
    DATABASE_URL: relayed.url,
    DATABASE_TIMEOUT_MS: String(DATABASE_TIMEOUT_MS),
  });
});

afterAll(async () => {
  await gateway?.stop();
  await relay?.close();
  await receiver.stop();
});

describe('webhook delivery over Postgres connections cut off without a reset', () => {
  it('gives up on the stranded claim within its bound and delivers what is due, once', async () => {
    // The CLI writes on the database directly, not through the relay.
    const added = await runCliJson<{ id: string; secret: string }>(
      ['webhook', 'add', '--org-id', org.org_id, '--url', receiver.endpoint('/strand')],
      env,
    );
    receiver.setSecrets('/strand', [added.secret]);
    const sendTest = () =>
      runCliJson<{ message_id: string }>(['webhook', 'test', '--id', added.id], env);
    const first = await sendTest();
    // Recorded, not only received: an attempt whose COMMIT is stranded is attempted again.
    await eventually(async () => {
      const { rows } = await context.db.query(
        `SELECT 1 FROM webhook_deliveries WHERE message_id = $1 AND state = 'delivered'`,
        [first.message_id],
      );
      return rows.length === 1 ? true : undefined;
    });

    // Every connection open now (the dispatcher's pooled ones among them) goes silent for
    // good; the idle dispatcher's next poll sends its claim on one of them.
    relay.strandOpen();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = Date.now();
    const second = await sendTest();
    await receiver.waitFor('/strand', 'webhook.test', 2, 60_000);
    // The statement's bound and its read grace (2 s) for each stranded connection the pool
    // hands out (up to its idle ones), not TCP's quarter of an hour; a minute leaves room for
    // a loaded machine.
    expect(Date.now() - started).toBeLessThan(60_000);

    // Postgres has each delivered after one attempt (the second's record commits after its
    // receiver answered), and each message arrived once.
    const delivered = async () => {
      const { rows } = await context.db.query<{ state: string; attempt_count: number }>(
        `SELECT state, attempt_count FROM webhook_deliveries WHERE message_id = ANY($1)`,
        [[first.message_id, second.message_id]],
      );
      return rows.every((row) => row.state !== 'pending') ? rows : undefined;
    };
    expect(await eventually(delivered)).toEqual([
      { state: 'delivered', attempt_count: 1 },
      { state: 'delivered', attempt_count: 1 },
    ]);
    const ids = receiver.ofType('/strand', 'webhook.test').map((message) => message.id);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
  }, 90_000);
});
