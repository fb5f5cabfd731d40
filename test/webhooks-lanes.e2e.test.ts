// Webhook lanes (docs/decisions.md 317): an endpoint gets several attempts at once, on lanes,
// while the messages about one subject (a product user, a credential, …) still arrive in the
// order they were created; no two dispatchers ever send one delivery at once; a 410 on one
// lane disables the endpoint for all of them, and its health stays one record however many
// lanes fail together. The dispatchers here run in-process, each on a Postgres pool of its
// own, as separate instances would, with the settings every webhook test gateway has.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { parseMasterKeys } from '../src/credentials/secret-box.js';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import { ensureDatabase, migrate } from '../src/db/migrate.js';
import { createLogger } from '../src/log.js';
import { DeliveryClient } from '../src/webhooks/delivery-client.js';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.js';
import { createEndpoint, deleteEndpoint, type WebhookSettings } from '../src/webhooks/endpoints.js';
import { emitEvents, type OutboxEvent } from '../src/webhooks/outbox.js';
import { parseRetrySchedule } from '../src/webhooks/retry-schedule.js';
import { isolatedContext } from './support/context.js';
import { TEST_DATABASE_URL, TEST_MASTER_KEY } from './support/env.js';
import { eventually } from './support/services.js';
import {
  WebhookReceiver,
  webhookEnv,
  type Behaviour,
  type ReceivedMessage,
} from './support/webhook-receiver.js';

const { prefix, db } = isolatedContext('wh-lanes');
const env = webhookEnv(prefix);
const receiver = new WebhookReceiver();
const box = parseMasterKeys(TEST_MASTER_KEY, env.CREDENTIALS_MASTER_KEY_ID!, undefined);
const policy = { allowHttp: true, allowPrivate: true };
const settings: WebhookSettings = { policy, box };
const logger = createLogger('silent');

/** A DeliveryClient that counts what it sent: which dispatcher made the attempts. */
class CountingClient extends DeliveryClient {
  posts = 0;
  private readonly inFlightByUrl = new Map<string, number>();
  /** The most attempts this dispatcher had in flight to one URL at once. */
  readonly maxInFlightByUrl = new Map<string, number>();
  override async post(
    ...args: Parameters<DeliveryClient['post']>
  ): ReturnType<DeliveryClient['post']> {
    this.posts += 1;
    const [url] = args;
    const now = (this.inFlightByUrl.get(url) ?? 0) + 1;
    this.inFlightByUrl.set(url, now);
    this.maxInFlightByUrl.set(url, Math.max(now, this.maxInFlightByUrl.get(url) ?? 0));
    try {
      return await super.post(...args);
    } finally {
      this.inFlightByUrl.set(url, this.inFlightByUrl.get(url)! - 1);
    }
  }
}

interface RunningDispatcher {
  readonly dispatcher: WebhookDispatcher;
  readonly client: CountingClient;
  readonly pool: DbPool;
}
const running: RunningDispatcher[] = [];

/**
 * A dispatcher as a gateway instance runs it (webhookEnv's settings, or another attempt
 * time-out), on its own pool.
 */
function startDispatcher(
  concurrency: number,
  attemptTimeoutMs = Number(env.WEBHOOK_TIMEOUT_MS),
  retrySchedule = env.WEBHOOK_RETRY_SCHEDULE!,
): RunningDispatcher {
  const pool = createDbPool(TEST_DATABASE_URL, concurrency + 1);
  const client = new CountingClient(policy, attemptTimeoutMs);
  const dispatcher = new WebhookDispatcher(
    pool,
    client,
    box,
    {
      concurrency,
      retryScheduleS: parseRetrySchedule(retrySchedule),
      disableAfterMs: 5 * 86_400_000,
      pollIntervalMs: Number(env.WEBHOOK_POLL_INTERVAL_MS),
    },
    logger,
  );
  dispatcher.start();
  const started = { dispatcher, client, pool };
  running.push(started);
  return started;
}

async function stopDispatchers(): Promise<void> {
  for (const { dispatcher, pool } of running.splice(0)) {
    await dispatcher.stop();
    await pool.end();
  }
}

/** An organization of its own per test: its events go to its endpoints alone. */
const newOrg = (name: string) => createOrganization(db, name);

async function addEndpoint(
  orgId: string,
  path: string,
  eventTypes: string[] = [],
): Promise<string> {
  const created = await createEndpoint(
    db as unknown as DbPool,
    settings,
    { userId: 'test' },
    orgId,
    {
      url: receiver.endpoint(path),
      eventTypes,
    },
  );
  if ('code' in created) throw new Error(created.message);
  receiver.setSecrets(path, [created.secret]);
  return created.row.id;
}

/** `perSubject` product_user events about each of `subjects` users, interleaved. */
function productUserEvents(
  orgId: string,
  subjects: number,
  perSubject: number,
  tag: string,
): OutboxEvent[] {
  const events: OutboxEvent[] = [];
  for (let n = 0; n < perSubject; n += 1) {
    for (let subject = 0; subject < subjects; subject += 1) {
      events.push({
        orgId,
        type: n === 0 ? 'product_user.created' : 'product_user.blocked',
        data: { product_end_user_id: `pu_${tag}_${subject}`, n },
      });
    }
  }
  return events;
}

const subjectOf = (message: ReceivedMessage) => String(message.payload.data.product_end_user_id);

/**
 * Answers as `behaviour` does and counts, per subject, the requests in flight at once: the
 * promise is one at a time per subject (its lane), however many the endpoint has in flight.
 */
function perSubject(behaviour: Behaviour): { behaviour: Behaviour; maxInFlight: () => number } {
  const inFlight = new Map<string, number>();
  let max = 0;
  return {
    behaviour: (message, attempt) => {
      const answer = behaviour(message, attempt);
      const subject = subjectOf(message);
      const now = (inFlight.get(subject) ?? 0) + 1;
      inFlight.set(subject, now);
      max = Math.max(max, now);
      // Set before the receiver's own timer of the same delay: it ends first.
      setTimeout(() => inFlight.set(subject, inFlight.get(subject)! - 1), answer.delayMs ?? 0);
      return answer;
    },
    maxInFlight: () => max,
  };
}

/** Each subject's messages, by `n`, in the order their first attempts arrived. */
function firstAttemptOrder(messages: readonly ReceivedMessage[]): Map<string, number[]> {
  const order = new Map<string, number[]>();
  for (const message of messages) {
    if (message.attempt !== 1) continue;
    const seen = order.get(subjectOf(message)) ?? [];
    seen.push(Number(message.payload.data.n));
    order.set(subjectOf(message), seen);
  }
  return order;
}

/** Waits until every message of `path` was answered 2xx at least once. */
async function allDelivered(path: string, count: number, timeoutMs = 30_000): Promise<void> {
  await eventually(
    async () =>
      new Set(
        receiver
          .messages(path)
          .filter((message) => message.status < 300)
          .map((message) => message.id),
      ).size >= count
        ? true
        : undefined,
    timeoutMs,
  );
}

async function endpointState(id: string) {
  const { rows } = await db.query<{
    status: string;
    disabled_reason: string | null;
    failing_since: Date | null;
  }>(
    `SELECT e.status, e.disabled_reason, s.failing_since
       FROM webhook_endpoints e JOIN webhook_endpoint_states s ON s.endpoint_id = e.id
      WHERE e.id = $1`,
    [id],
  );
  return rows[0];
}

beforeAll(async () => {
  await receiver.start();
});

afterEach(stopDispatchers);

afterAll(async () => {
  await stopDispatchers();
  await db.query('DELETE FROM webhook_endpoints WHERE url LIKE $1', [`${receiver.url}%`]);
  await receiver.stop();
});

afterAll(() => {
  expect(receiver.unverified).toEqual([]);
});

describe('lanes', () => {
  it('a receiver answering in 50 ms gets many subjects at once, each subject in creation order', async () => {
    const orgId = await newOrg('lanes busy');
    await addEndpoint(orgId, '/busy');
    const busy = perSubject(() => ({ status: 200, delayMs: 50 }));
    receiver.behave('/busy', busy.behaviour);
    const events = productUserEvents(orgId, 40, 4, 'busy');
    await emitEvents(db, events);
    startDispatcher(8);
    await allDelivered('/busy', events.length);

    const messages = receiver.messages('/busy');
    // More than one at a time, and never more than the endpoint's 8 lanes.
    expect(receiver.maxInFlightByPath.get('/busy')).toBeGreaterThan(1);
    expect(receiver.maxInFlightByPath.get('/busy')).toBeLessThanOrEqual(8);
    const order = firstAttemptOrder(messages);
    expect(order.size).toBe(40);
    for (const [subject, sequence] of order) expect(sequence, subject).toEqual([0, 1, 2, 3]);
    expect(busy.maxInFlight()).toBe(1);
    expect([...receiver.overlappingIds]).toEqual([]);
  });

  it('a message waiting for its retry does not hold back its subject; first attempts stay in order', async () => {
    const orgId = await newOrg('lanes retrying');
    await addEndpoint(orgId, '/retrying');
    // The first attempt of pu_retry_0's second message fails (500): its retry comes four
    // seconds later (not webhookEnv's one: a loaded machine took longer than a second to send
    // the subject's next three), after the subject's next messages.
    receiver.behave('/retrying', (message, attempt) => ({
      status:
        subjectOf(message) === 'pu_retry_0' && message.payload.data.n === 1 && attempt === 1
          ? 500
          : 200,
      delayMs: 20,
    }));
    const events = productUserEvents(orgId, 6, 5, 'retry');
    await emitEvents(db, events);
    startDispatcher(4, Number(env.WEBHOOK_TIMEOUT_MS), '4,1,1,1,1,1,1,1,1,1');
    await allDelivered('/retrying', events.length);

    const messages = receiver.messages('/retrying');
    for (const [subject, sequence] of firstAttemptOrder(messages)) {
      expect(sequence, subject).toEqual([0, 1, 2, 3, 4]);
    }
    const failing = messages.filter(
      (message) => subjectOf(message) === 'pu_retry_0' && message.payload.data.n === 1,
    );
    expect(failing.map((message) => [message.attempt, message.status])).toEqual([
      [1, 500],
      [2, 200],
    ]);
    expect(new Set(failing.map((message) => message.body)).size).toBe(1);
    // Its subject's later messages went while it waited.
    const later = messages.filter(
      (message) => subjectOf(message) === 'pu_retry_0' && Number(message.payload.data.n) > 1,
    );
    expect(later).toHaveLength(3);
    for (const message of later)
      expect(message.receivedAtMs).toBeLessThan(failing[1]!.receivedAtMs);
  });

  it('two dispatchers on separate pools never send one delivery at once, and keep each subject in order', async () => {
    const orgId = await newOrg('lanes shared');
    await addEndpoint(orgId, '/shared');
    const shared = perSubject(() => ({
      status: 200,
      delayMs: 20 + Math.floor(Math.random() * 40),
    }));
    receiver.behave('/shared', shared.behaviour);
    const events = productUserEvents(orgId, 30, 4, 'shared');
    const first = startDispatcher(4);
    const second = startDispatcher(4);
    await emitEvents(db, events);
    await allDelivered('/shared', events.length);

    expect(first.client.posts).toBeGreaterThan(0);
    expect(second.client.posts).toBeGreaterThan(0);
    expect([...receiver.overlappingIds]).toEqual([]);
    expect(shared.maxInFlight()).toBe(1);
    const messages = receiver.messages('/shared');
    // Healthy: each message was sent once.
    expect(messages).toHaveLength(events.length);
    for (const [subject, sequence] of firstAttemptOrder(messages)) {
      expect(sequence, subject).toEqual([0, 1, 2, 3]);
    }
    expect(receiver.maxInFlightByPath.get('/shared')).toBeGreaterThan(1);
    // Every attempt is in the delivery log, once (the last may still be committing).
    await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_attempts a
           JOIN webhook_deliveries d ON d.id = a.delivery_id
           JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE e.url = $1`,
        [`${receiver.url}/shared`],
      );
      return rows[0]!.n === events.length ? true : undefined;
    });
  });

  it('one endpoint with a backlog does not hold up another endpoint’s message', async () => {
    const orgId = await newOrg('lanes noisy');
    // The quiet endpoint takes api_key events alone; the noisy one the product users'.
    await addEndpoint(orgId, '/noisy', ['product_user.created']);
    await addEndpoint(orgId, '/quiet', ['api_key.created']);
    // The noisy endpoint answers nothing until the quiet one has its message.
    let answerNoisy = (): void => undefined;
    const noisyAnswers = new Promise<void>((resolve) => (answerNoisy = resolve));
    receiver.behave('/noisy', () => ({ status: 200, heldUntil: noisyAnswers }));
    // A backlog of four rounds of the three slots the noisy endpoint may take.
    const noisy = productUserEvents(orgId, 12, 1, 'noisy');
    await emitEvents(db, noisy);
    // Attempts time out after a minute, past the wait for the quiet message: no noisy slot
    // frees itself meanwhile.
    startDispatcher(4, 60_000);
    await eventually(async () => (receiver.messages('/noisy').length >= 3 ? true : undefined));
    await emitEvents(db, [{ orgId, type: 'api_key.created', data: { id: 'key_quiet' } }]);
    // One endpoint takes three of the instance's four slots at most: the quiet endpoint's
    // message goes while every noisy attempt is still unanswered and none can have timed out
    // (were all four slots the noisy endpoint's, it would not come before the wait ends), with
    // the noisy backlog still there.
    await receiver.waitFor('/quiet', 'api_key.created', 1, 15_000);
    expect(receiver.messages('/noisy').length).toBeLessThan(noisy.length);
    answerNoisy();
    await allDelivered('/noisy', noisy.length, 60_000);
  }, 90_000);
});

describe('a rolling deploy', () => {
  it('an instance of the version before lanes, holding the endpoint, and this one never send to it at once', async () => {
    const orgId = await newOrg('lanes rolling');
    const endpointId = await addEndpoint(orgId, '/rolling');
    // What an older instance's attempt holds (decision 167): the state row, FOR UPDATE.
    const older = await db.connect();
    try {
      await older.query('BEGIN');
      await older.query(
        'SELECT 1 FROM webhook_endpoint_states WHERE endpoint_id = $1 FOR UPDATE SKIP LOCKED',
        [endpointId],
      );
      await emitEvents(db, productUserEvents(orgId, 4, 2, 'rolling'));
      startDispatcher(4);
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(receiver.messages('/rolling')).toEqual([]);
    } finally {
      await older.query('ROLLBACK');
      older.release();
    }
    await allDelivered('/rolling', 8);
    // And while this version's lanes send (an attempt answered only once looked at), the older
    // one's claim skips the endpoint.
    let answer = (): void => undefined;
    receiver.behave('/rolling', () => ({
      status: 200,
      heldUntil: new Promise<void>((resolve) => (answer = resolve)),
    }));
    await emitEvents(db, productUserEvents(orgId, 1, 1, 'rolling-2'));
    await eventually(async () => (receiver.messages('/rolling').length > 8 ? true : undefined));
    const { rows } = await db.query(
      'SELECT 1 FROM webhook_endpoint_states WHERE endpoint_id = $1 FOR UPDATE SKIP LOCKED',
      [endpointId],
    );
    expect(rows).toEqual([]);
    answer();
  });
});

describe('health with lanes', () => {
  it('a 410 on one lane disables the endpoint for every lane; enabling it sends the rest, in order', async () => {
    const orgId = await newOrg('lanes gone');
    const endpointId = await addEndpoint(orgId, '/gone-lanes');
    receiver.behave('/gone-lanes', (message, attempt) => ({
      status:
        subjectOf(message) === 'pu_gone_3' && message.payload.data.n === 2 && attempt === 1
          ? 410
          : 200,
      delayMs: 30,
    }));
    const events = productUserEvents(orgId, 8, 12, 'gone');
    await emitEvents(db, events);
    startDispatcher(8);
    await eventually(async () =>
      (await endpointState(endpointId))?.status === 'disabled' ? true : undefined,
    );
    expect(await endpointState(endpointId)).toMatchObject({
      status: 'disabled',
      disabled_reason: 'gone',
    });
    // Attempts already in flight on other lanes end; none starts after.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const sentBefore = receiver.messages('/gone-lanes').length;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(receiver.messages('/gone-lanes')).toHaveLength(sentBefore);
    expect(sentBefore).toBeLessThan(events.length);
    const { rows: audit } = await db.query(
      "SELECT user_id, details FROM dashboard_audit_log WHERE object_id = $1 AND action = 'webhook.disable'",
      [endpointId],
    );
    expect(audit).toEqual([{ user_id: 'system', details: { reason: 'gone' } }]);

    await db.query(
      `UPDATE webhook_endpoints SET status = 'enabled', disabled_reason = NULL, disabled_at = NULL
        WHERE id = $1`,
      [endpointId],
    );
    await allDelivered('/gone-lanes', events.length);
    for (const [subject, sequence] of firstAttemptOrder(receiver.messages('/gone-lanes'))) {
      expect(sequence, subject).toEqual([...Array(12).keys()]);
    }
  });

  it('lanes failing together disable an endpoint failing for days once, and record every attempt', async () => {
    const orgId = await newOrg('lanes failing');
    const endpointId = await addEndpoint(orgId, '/failing-lanes');
    receiver.behave('/failing-lanes', () => ({ status: 500, delayMs: 40 }));
    await db.query(
      "UPDATE webhook_endpoint_states SET failing_since = now() - interval '6 days' WHERE endpoint_id = $1",
      [endpointId],
    );
    await emitEvents(db, productUserEvents(orgId, 16, 1, 'failing'));
    startDispatcher(8);
    startDispatcher(8);
    await eventually(async () =>
      (await endpointState(endpointId))?.status === 'disabled' ? true : undefined,
    );
    await stopDispatchers();
    expect(await endpointState(endpointId)).toMatchObject({
      status: 'disabled',
      disabled_reason: 'failing',
    });
    const { rows: audit } = await db.query(
      "SELECT details FROM dashboard_audit_log WHERE object_id = $1 AND action = 'webhook.disable'",
      [endpointId],
    );
    expect(audit).toEqual([{ details: { reason: 'failing' } }]);
    // Every attempt is recorded: no lane's record was lost to another's.
    await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_attempts a
           JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1`,
        [endpointId],
      );
      return rows[0]!.n === receiver.messages('/failing-lanes').length ? true : undefined;
    });
  });

  it('a failing endpoint gets one attempt at a time from an instance', async () => {
    const orgId = await newOrg('lanes throttled');
    const endpointId = await addEndpoint(orgId, '/throttled');
    receiver.behave('/throttled', () => ({ status: 500, delayMs: 200 }));
    await db.query(
      "UPDATE webhook_endpoint_states SET failing_since = now() - interval '1 hour' WHERE endpoint_id = $1",
      [endpointId],
    );
    // 16 subjects: a healthy endpoint would get 7 of this instance's 8 slots at once.
    await emitEvents(db, productUserEvents(orgId, 16, 1, 'throttled'));
    const { client } = startDispatcher(8);
    await eventually(
      async () => (receiver.messages('/throttled').length >= 6 ? true : undefined),
      15_000,
    );
    expect(client.maxInFlightByUrl.get(`${receiver.url}/throttled`)).toBe(1);
  });

  it('a success made while another lane records a failure clears failing_since', async () => {
    const orgId = await newOrg('lanes race');
    const endpointId = await addEndpoint(orgId, '/race');
    receiver.behave('/race', () => ({ status: 200 }));
    startDispatcher(4);
    await emitEvents(db, productUserEvents(orgId, 1, 1, 'race-a'));
    await allDelivered('/race', 1);
    await eventually(async () => {
      const { rows } = await db.query(
        'SELECT 1 FROM webhook_endpoint_states WHERE endpoint_id = $1 AND last_success_at IS NOT NULL',
        [endpointId],
      );
      return rows.length > 0 ? true : undefined;
    });
    const delivered = async () => {
      const { rows } = await db.query(
        "SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 AND state = 'delivered'",
        [endpointId],
      );
      return rows.length === 2 ? true : undefined;
    };
    // Another lane's failure, as its record writes it (its lock, then the state row), not
    // committed yet. A success within the second after the last one used to pass the row by
    // without waiting, commit, and leave failing_since to this failure.
    const failing = await db.connect();
    try {
      await failing.query('BEGIN');
      await failing.query(
        `SELECT pg_advisory_xact_lock(
           hashtextextended('webhook endpoint health' || chr(10) || $1::text, 0))`,
        [endpointId],
      );
      await failing.query(
        `UPDATE webhook_endpoint_states SET failing_since = COALESCE(failing_since, now()),
                last_attempt_at = GREATEST(last_attempt_at, now())
          WHERE endpoint_id = $1`,
        [endpointId],
      );
      // A success after that failure: answered while the failure is being recorded.
      await emitEvents(db, productUserEvents(orgId, 1, 1, 'race-b'));
      await allDelivered('/race', 2);
      // Its record now waits for the failure's (it used to commit at once).
      await eventually(delivered, 500).catch(() => undefined);
      await failing.query('COMMIT');
    } finally {
      failing.release();
    }
    await eventually(delivered);
    // The last thing that happened is a success.
    expect((await endpointState(endpointId))!.failing_since).toBeNull();
  });

  it('a success on any lane clears failing_since; failures keep the first one', async () => {
    const orgId = await newOrg('lanes mixed');
    const endpointId = await addEndpoint(orgId, '/mixed');
    // pu_mixed_0 is refused every time; the other subjects are answered.
    receiver.behave('/mixed', (message) => ({
      status: subjectOf(message) === 'pu_mixed_0' ? 500 : 200,
      delayMs: 30,
    }));
    await emitEvents(db, productUserEvents(orgId, 1, 1, 'mixed'));
    startDispatcher(4);
    const failingSince = await eventually(
      async () => (await endpointState(endpointId))?.failing_since ?? undefined,
    );
    // Its retries fail too: failing_since stays the first failure's.
    await eventually(async () => (receiver.messages('/mixed').length >= 3 ? true : undefined));
    expect((await endpointState(endpointId))!.failing_since).toEqual(failingSince);
    await emitEvents(
      db,
      productUserEvents(orgId, 6, 1, 'mixed').filter(
        (event) =>
          (event.data as { product_end_user_id: string }).product_end_user_id !== 'pu_mixed_0',
      ),
    );
    await eventually(async () =>
      (await endpointState(endpointId))?.failing_since === null ? true : undefined,
    );
    const { rows } = await db.query<{ last_success_at: Date }>(
      'SELECT last_success_at FROM webhook_endpoint_states WHERE endpoint_id = $1',
      [endpointId],
    );
    expect(rows[0]!.last_success_at.getTime()).toBeGreaterThan(failingSince.getTime());
  });
});

describe('deleting an endpoint', () => {
  it('waits for the attempts in flight, not for the backlog the lanes keep sending', async () => {
    const orgId = await newOrg('lanes delete');
    const endpointId = await addEndpoint(orgId, '/delete-busy');
    receiver.behave('/delete-busy', () => ({ status: 200, delayMs: 250 }));
    // 320 messages on the 8 lanes: about 10 s of work at 250 ms an answer.
    const events = productUserEvents(orgId, 40, 8, 'delete');
    await emitEvents(db, events);
    startDispatcher(8);
    startDispatcher(8);
    await eventually(async () =>
      receiver.messages('/delete-busy').length >= 16 ? true : undefined,
    );
    const startedAtMs = Date.now();
    expect(
      await deleteEndpoint(db as unknown as DbPool, { userId: 'test' }, orgId, endpointId),
    ).toBe(true);
    const tookMs = Date.now() - startedAtMs;
    // Each lane's attempt in flight ends (250 ms); the rest of the backlog is not sent first.
    expect(tookMs).toBeLessThan(2_500);
    expect(receiver.messages('/delete-busy').length).toBeLessThan(events.length / 2);
  }, 60_000);
});

/** Back to the schema before 046 (and 047): what an older instance's database looks like. */
const REWIND_046 = `DROP TRIGGER webhook_endpoint_lanes_create ON webhook_endpoint_states;
  DROP FUNCTION gw_webhook_endpoint_lanes();
  DROP TABLE webhook_endpoint_lanes;
  DROP INDEX webhook_deliveries_lane_due, webhook_deliveries_lane_order;
  ALTER TABLE webhook_deliveries DROP COLUMN lane;
  DROP FUNCTION gw_webhook_lane(text);
  CREATE INDEX IF NOT EXISTS webhook_deliveries_due
    ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';
  CREATE INDEX webhook_deliveries_order ON webhook_deliveries (endpoint_id, message_seq)
    WHERE state = 'pending';
  DELETE FROM schema_migrations
   WHERE name IN ('046_webhook_lanes.sql', '047_webhook_due_endpoints.sql')`;

/** A database of its own for a migration test (dropped after). */
async function withFreshDatabase(name: string, body: (fresh: DbPool) => Promise<void>) {
  const url = `${TEST_DATABASE_URL}_${name}`;
  await ensureDatabase(url);
  const fresh = createDbPool(url, 3);
  try {
    await migrate(fresh);
    await fresh.query(REWIND_046);
    await body(fresh);
  } finally {
    await fresh.end();
    const admin = createDbPool(TEST_DATABASE_URL.replace(/\/[^/]*$/, '/postgres'), 1);
    await admin.query(`DROP DATABASE IF EXISTS "${new URL(url).pathname.slice(1)}"`);
    await admin.end();
  }
}

describe('migration 046', () => {
  it('gives existing endpoints their lanes and moves pending deliveries to their subject’s lane', async () => {
    const url = `${TEST_DATABASE_URL}_webhook_lanes`;
    await ensureDatabase(url);
    const fresh = createDbPool(url, 2);
    try {
      await migrate(fresh);
      // Back to the schema before 046, with rows as the version before lanes wrote them.
      await fresh.query(REWIND_046);
      const org = await createOrganization(fresh, 'before 046');
      const addOld = async (id: string) => {
        await fresh.query(
          `INSERT INTO webhook_endpoints (id, org_id, url, secret_sealed)
           VALUES ($1, $2, 'https://example.com/hook', 'sealed')`,
          [id, org],
        );
        await fresh.query('INSERT INTO webhook_endpoint_states (endpoint_id) VALUES ($1)', [id]);
      };
      await addOld('wh_old');
      const old = (id: string, type: string, data: Record<string, unknown>) =>
        fresh.query(
          `WITH m AS (INSERT INTO webhook_messages (id, org_id, event_type, payload)
                      VALUES ($1, $2, $3, $4) RETURNING id, seq)
           INSERT INTO webhook_deliveries (message_id, endpoint_id, message_seq, state)
           SELECT id, 'wh_old', seq, $5 FROM m`,
          [
            id,
            org,
            type,
            JSON.stringify({ type, timestamp: '2026-05-01T00:00:00.000Z', data }),
            id.endsWith('done') ? 'delivered' : 'pending',
          ],
        );
      const subjects = Array.from({ length: 12 }, (_, index) => `pu_old_${index}`);
      for (const subject of subjects) {
        await old(`msg_${subject}`, 'product_user.created', { product_end_user_id: subject });
      }
      await old('msg_cap', 'cap.threshold', { cap_rule_id: 'cap_1', threshold: 0.8 });
      await old('msg_cred', 'provider_credential.rejected', { id: 'cred_old' });
      await old('msg_done', 'product_user.created', { product_end_user_id: 'pu_old_1' });

      expect(await migrate(fresh)).toEqual([
        '046_webhook_lanes.sql',
        '047_webhook_due_endpoints.sql',
      ]);
      const { rows: lanes } = await fresh.query<{ lanes: number[] }>(
        "SELECT array_agg(lane ORDER BY lane) AS lanes FROM webhook_endpoint_lanes WHERE endpoint_id = 'wh_old'",
      );
      expect(lanes[0]!.lanes).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      // A new message about the same subject goes to the lane its older one was moved to.
      await emitEvents(fresh, [
        ...subjects.map((subject) => ({
          orgId: org,
          type: 'product_user.blocked' as const,
          data: { product_end_user_id: subject },
        })),
        { orgId: org, type: 'wallet.low_balance', data: { org_id: org } },
        { orgId: org, type: 'provider_credential.failed_over', data: { id: 'cred_old' } },
      ]);
      const { rows } = await fresh.query<{ subject: string; lanes: number[] }>(
        `SELECT COALESCE(m.payload::jsonb -> 'data' ->> 'product_end_user_id',
                         m.payload::jsonb -> 'data' ->> 'id', 'org') AS subject,
                array_agg(DISTINCT d.lane) AS lanes
           FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
          WHERE d.state = 'pending'
          GROUP BY 1 ORDER BY 1`,
      );
      expect(rows).toHaveLength(subjects.length + 2);
      for (const row of rows) expect(row.lanes, row.subject).toHaveLength(1);
      // The subjects spread over the lanes (12 subjects on one lane would be 1 in 8^11).
      expect(new Set(rows.map((row) => row.lanes[0])).size).toBeGreaterThan(1);
      // A delivered one stays where it was; an endpoint added by an older instance (its state
      // row alone) gets its lanes too.
      const { rows: done } = await fresh.query<{ lane: number }>(
        "SELECT lane FROM webhook_deliveries WHERE message_id = 'msg_done'",
      );
      expect(done).toEqual([{ lane: 0 }]);
      await addOld('wh_new');
      const { rows: added } = await fresh.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_endpoint_lanes WHERE endpoint_id = 'wh_new'",
      );
      expect(added[0]!.n).toBe(8);
    } finally {
      await fresh.end();
      const admin = createDbPool(TEST_DATABASE_URL.replace(/\/[^/]*$/, '/postgres'), 1);
      await admin.query(`DROP DATABASE IF EXISTS "${new URL(url).pathname.slice(1)}"`);
      await admin.end();
    }
  });

  it('runs beside an older instance’s attempt in flight: both commit, no deadlock', async () => {
    await withFreshDatabase('webhook_lanes_lock', async (fresh) => {
      const org = await createOrganization(fresh, 'before 046, delivering');
      await fresh.query(
        `INSERT INTO webhook_endpoints (id, org_id, url, secret_sealed)
         VALUES ('wh_busy', $1, 'https://example.com/hook', 'sealed')`,
        [org],
      );
      await fresh.query("INSERT INTO webhook_endpoint_states (endpoint_id) VALUES ('wh_busy')");
      await fresh.query(
        `WITH m AS (INSERT INTO webhook_messages (id, org_id, event_type, payload)
                    VALUES ('msg_busy', $1, 'api_key.created', '{"data":{"id":"key_busy"}}')
                    RETURNING id, seq)
         INSERT INTO webhook_deliveries (message_id, endpoint_id, message_seq)
         SELECT id, 'wh_busy', seq FROM m`,
        [org],
      );
      // An older instance's attempt (decision 167): its claim, then its record once the
      // receiver answered, while 046 runs.
      const older = await fresh.connect();
      let recorded: string;
      let migrated: Promise<string[]>;
      try {
        await older.query('BEGIN');
        await older.query(
          "SELECT 1 FROM webhook_endpoint_states WHERE endpoint_id = 'wh_busy' FOR UPDATE SKIP LOCKED",
        );
        const { rows } = await older.query<{ id: string }>(
          `SELECT id::text FROM webhook_deliveries
            WHERE endpoint_id = 'wh_busy' AND state = 'pending' ORDER BY message_seq LIMIT 1
              FOR UPDATE`,
        );
        migrated = migrate(fresh);
        migrated.catch(() => undefined);
        // The receiver answers after the migration has started waiting (longer than the
        // server's deadlock_timeout: the attempt was the one rolled back). Waiting is seen in
        // pg_stat_activity, however long a loaded machine takes to get the migration there.
        await eventually(async () => {
          // asked on the test's own database: the fresh one's few connections are taken
          const { rows: waiting } = await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = $1 AND wait_event_type = 'Lock'`,
            [`${new URL(TEST_DATABASE_URL).pathname.slice(1)}_webhook_lanes_lock`],
          );
          return waiting[0]!.n > 0 ? true : undefined;
        });
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        try {
          await older.query(
            `INSERT INTO webhook_attempts (delivery_id, status_code, latency_ms, response_snippet)
             VALUES ($1, 200, 5, 'ok')`,
            [rows[0]!.id],
          );
          await older.query(
            "UPDATE webhook_deliveries SET state = 'delivered', delivered_at = now() WHERE id = $1",
            [rows[0]!.id],
          );
          await older.query(
            `UPDATE webhook_endpoint_states SET failing_since = NULL, last_attempt_at = now(),
                    last_success_at = now() WHERE endpoint_id = 'wh_busy'`,
          );
          await older.query('COMMIT');
          recorded = 'recorded';
        } catch (error) {
          await older.query('ROLLBACK');
          recorded = (error as Error).message;
        }
      } finally {
        older.release();
      }
      expect(recorded).toBe('recorded');
      expect(await migrated).toEqual(['046_webhook_lanes.sql', '047_webhook_due_endpoints.sql']);
      const { rows } = await fresh.query(
        "SELECT state, lane FROM webhook_deliveries WHERE message_id = 'msg_busy'",
      );
      expect(rows).toEqual([{ state: 'delivered', lane: 0 }]);
    });
  });
});
