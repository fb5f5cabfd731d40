// Enabling a webhook endpoint while dispatchers deliver (decision 503 sends what waited at
// once): the attempt still in flight from before the endpoint was disabled and the enabling
// both commit, and the enabling, which waits for that attempt (or for its backlog's rows),
// holds up none of the organization's other work (decision 548); it rewrites only what was
// tried (549), and an answer to an attempt made before a person changed the endpoint does not
// disable it (550). Deleting an endpoint with a backlog holds up none of it either (551). The dispatchers run in-process on pools of their own, as
// separate instances would.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { parseMasterKeys } from '../src/credentials/secret-box.js';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import { isGwError } from '../src/errors.js';
import { createLogger } from '../src/log.js';
import { DeliveryClient } from '../src/webhooks/delivery-client.js';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.js';
import {
  createEndpoint,
  deleteEndpoint,
  updateEndpoint,
  type WebhookSettings,
} from '../src/webhooks/endpoints.js';
import { emitEvent } from '../src/webhooks/outbox.js';
import { parseRetrySchedule } from '../src/webhooks/retry-schedule.js';
import { isolatedContext } from './support/context.js';
import { TEST_DATABASE_URL, TEST_MASTER_KEY } from './support/env.js';
import { eventually } from './support/services.js';
import { WebhookReceiver, webhookEnv } from './support/webhook-receiver.js';

const { prefix, db } = isolatedContext('wh-enable');
const env = webhookEnv(prefix);
const receiver = new WebhookReceiver();
const box = parseMasterKeys(TEST_MASTER_KEY, env.CREDENTIALS_MASTER_KEY_ID!, undefined);
const policy = { allowHttp: true, allowPrivate: true };
const settings: WebhookSettings = { policy, box };
const logger = createLogger('silent');
const person = { userId: 'test' };
/** The pool the tests enable endpoints on, named so its waits can be seen in Postgres. */
const ENABLING = 'gw-test-enabling';
/** The pool the organization's other work (its events) runs on. */
const EMITTING = 'gw-test-emitting';
const pools: DbPool[] = [];
const dispatchers: WebhookDispatcher[] = [];

function pool(applicationName: string): DbPool {
  const created = createDbPool(TEST_DATABASE_URL, 2, undefined, { applicationName });
  pools.push(created);
  return created;
}

function startDispatcher(): void {
  const dispatcher = new WebhookDispatcher(
    pool('gw-webhooks'),
    new DeliveryClient(policy, Number(env.WEBHOOK_TIMEOUT_MS)),
    box,
    {
      concurrency: 2,
      retryScheduleS: parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE!),
      disableAfterMs: 5 * 86_400_000,
      pollIntervalMs: Number(env.WEBHOOK_POLL_INTERVAL_MS),
    },
    logger,
  );
  dispatcher.start();
  dispatchers.push(dispatcher);
}

/** Each endpoint's signing secret, by id. */
const secrets = new Map<string, string>();

async function addEndpoint(orgId: string, path: string): Promise<string> {
  const created = await createEndpoint(db as unknown as DbPool, settings, person, orgId, {
    url: receiver.endpoint(path),
  });
  if (isGwError(created)) throw new Error(created.message);
  receiver.setSecrets(path, [created.secret]);
  secrets.set(created.row.id, created.secret);
  return created.row.id;
}

async function endpointStatus(id: string) {
  const { rows } = await db.query(
    'SELECT status, disabled_reason FROM webhook_endpoints WHERE id = $1',
    [id],
  );
  return rows[0];
}

/** The status codes of a message's attempts, once it was delivered. */
function deliveredAfter(messageId: string): Promise<number[]> {
  return eventually(async () => {
    const { rows } = await db.query<{ state: string; codes: number[] }>(
      `SELECT d.state, array_agg(a.status_code ORDER BY a.id) AS codes
         FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id
        WHERE d.message_id = $1 GROUP BY d.state`,
      [messageId],
    );
    return rows[0]?.state === 'delivered' ? rows[0].codes : undefined;
  });
}

/** Whether a connection of the pool named `applicationName` waits for a lock now. */
async function waitsForLock(applicationName: string): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
    [applicationName],
  );
  return rows.length > 0;
}

/** Settles with `work`, or with 'blocked' once its connection waits for a lock. */
async function unlessBlocked<T>(work: Promise<T>, applicationName: string): Promise<T | 'blocked'> {
  const blocked = eventually(async () =>
    (await waitsForLock(applicationName)) ? true : undefined,
  );
  return Promise.race([work, blocked.then(() => 'blocked' as const)]);
}

beforeAll(async () => {
  await receiver.start();
});

afterEach(async () => {
  for (const dispatcher of dispatchers.splice(0)) await dispatcher.stop();
});

afterAll(async () => {
  for (const created of pools.splice(0)) await created.end();
  await db.query('DELETE FROM webhook_endpoints WHERE url LIKE $1', [`${receiver.url}%`]);
  await receiver.stop();
  expect(receiver.unverified).toEqual([]);
});

describe('enabling an endpoint while dispatchers deliver', () => {
  it('a retry in flight from before it was disabled, answered 410, and the enabling both commit', async () => {
    const orgId = await createOrganization(db, 'enable-in-flight');
    const id = await addEndpoint(orgId, '/in-flight');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    receiver.behave('/in-flight', (message, attempt) => {
      if (message.payload.data.product_end_user_id !== 'pu_in_flight') return { status: 200 };
      if (attempt === 1) return { status: 500 };
      return attempt === 2 ? { status: 410, heldUntil: held } : { status: 200 };
    });
    await emitEvent(db, orgId, 'product_user.created', { product_end_user_id: 'pu_in_flight' });
    startDispatcher();
    const [, message] = await receiver.waitFor('/in-flight', 'product_user.created', 2);

    // A person disables it while the attempt is in flight, then enables it again.
    const enablingDb = pool(ENABLING);
    const disabled = await updateEndpoint(enablingDb, settings, person, orgId, id, {
      enabled: false,
    });
    expect(isGwError(disabled) ? disabled : disabled.status).toBe('disabled');
    const enabling = updateEndpoint(enablingDb, settings, person, orgId, id, { enabled: true });
    let emitted: Promise<number> | undefined;
    try {
      // It waits for the attempt: the message it sends again from the start of its schedule
      // is that attempt's.
      await eventually(async () => ((await waitsForLock(ENABLING)) ? true : undefined));
      // Meanwhile the organization's members create API keys, its users make requests: its
      // events are queued as ever (for this endpoint too), not after the attempt.
      emitted = emitEvent(pool(EMITTING), orgId, 'product_user.created', {
        product_end_user_id: 'pu_meanwhile',
      });
      expect(await unlessBlocked(emitted, EMITTING)).toBe(1);
    } finally {
      release(); // the receiver answers 410 Gone
    }

    const enabled = await enabling;
    expect(isGwError(enabled) ? enabled : enabled.status).toBe('enabled');
    // The 410 is in the log, and the message, made due again by the enabling, was delivered.
    expect(await deliveredAfter(message!.id)).toEqual([500, 410, 200]);
    await receiver.waitFor('/in-flight', 'product_user.created', 4);
    expect(await endpointStatus(id)).toEqual({ status: 'enabled', disabled_reason: null });
  });

  for (const [change, before, after] of [
    ['enabled again', '/before-enable', '/before-enable'],
    ['given another URL', '/before-move', '/after-move'],
  ] as const) {
    it(`a 410 to an attempt made before the endpoint was ${change} does not disable it`, async () => {
      const orgId = await createOrganization(db, `410-before-${change}`);
      const id = await addEndpoint(orgId, before);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      receiver.behave(before, () => ({ status: 410, heldUntil: held }));
      await emitEvent(db, orgId, 'product_user.created', { product_end_user_id: 'pu_before' });
      startDispatcher();
      const [message] = await receiver.waitFor(before, 'product_user.created', 1);

      // While that attempt is in flight, a person fixes the endpoint: disables and enables it,
      // or points it at the receiver's new address.
      const fixing = pool(ENABLING);
      if (change === 'enabled again') {
        await updateEndpoint(fixing, settings, person, orgId, id, { enabled: false });
        await updateEndpoint(fixing, settings, person, orgId, id, { enabled: true });
        receiver.behave(before, () => ({ status: 200 }));
      } else {
        const moved = await updateEndpoint(fixing, settings, person, orgId, id, {
          url: receiver.endpoint(after, [secrets.get(id)!]),
        });
        expect(isGwError(moved) ? moved : moved.status).toBe('enabled');
      }
      release(); // the old receiver answers 410 Gone

      // The 410 is in the log; the endpoint stays as the person left it, and the retry
      // delivers the message.
      expect(await deliveredAfter(message!.id)).toEqual([410, 200]);
      expect(await endpointStatus(id)).toEqual({ status: 'enabled', disabled_reason: null });
      const received = receiver.ofType(after, 'product_user.created');
      expect(received.at(-1)!.id).toBe(message!.id);
    });
  }

  it('leaves alone the messages that waited while it was disabled: the enabling rewrites only what was tried', async () => {
    const orgId = await createOrganization(db, 'enable-backlog');
    const id = await addEndpoint(orgId, '/backlog');
    await updateEndpoint(db as unknown as DbPool, settings, person, orgId, id, { enabled: false });
    // Weeks of events while it is disabled (here two): each waits, due, never tried. A lock
    // on one of them stands for their number: an enabling that rewrote them all waited on it,
    // and one of weeks ran past DATABASE_TIMEOUT_MS (a 500, and the endpoint stayed disabled).
    for (const user of ['pu_waited_1', 'pu_waited_2']) {
      await emitEvent(db, orgId, 'product_user.created', { product_end_user_id: user });
    }
    const holder = await pool('gw-test-holder').connect();
    await holder.query('BEGIN');
    await holder.query(
      'SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id LIMIT 1 FOR UPDATE',
      [id],
    );
    const enabling = updateEndpoint(pool(ENABLING), settings, person, orgId, id, {
      enabled: true,
    });
    try {
      const enabled = await unlessBlocked(enabling, ENABLING);
      expect(isGwError(enabled) || enabled === 'blocked' ? enabled : enabled.status).toBe(
        'enabled',
      );
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    await enabling;
    startDispatcher();
    const received = await receiver.waitFor('/backlog', 'product_user.created', 2);
    // Two subjects, two lanes: each arrives, in either order (order holds per subject only).
    expect(received.map((message) => message.payload.data.product_end_user_id).sort()).toEqual([
      'pu_waited_1',
      'pu_waited_2',
    ]);
  });
});

describe('giving a failing endpoint another URL', () => {
  it("restarts its failing window: the old receiver's days of failures count against the new one no more", async () => {
    const orgId = await createOrganization(db, 'new-url');
    const id = await addEndpoint(orgId, '/old-receiver');
    // Its old receiver failed every delivery for four days and 23 hours: an hour from being
    // disabled, and warned already.
    await db.query(
      `UPDATE webhook_endpoint_states SET failing_since = now() - interval '119 hours'
        WHERE endpoint_id = $1`,
      [id],
    );
    const changed = await updateEndpoint(db as unknown as DbPool, settings, person, orgId, id, {
      url: receiver.endpoint('/new-receiver'),
    });
    expect(isGwError(changed) ? changed : changed.failing_since).toBeNull();
    const { rows } = await db.query(
      'SELECT failing_since FROM webhook_endpoint_states WHERE endpoint_id = $1',
      [id],
    );
    expect(rows).toEqual([{ failing_since: null }]);
  });

  it('sends the new URL the messages waiting in backoff for the old one at once, each from the start of its schedule', async () => {
    const orgId = await createOrganization(db, 'new-url-backlog');
    const id = await addEndpoint(orgId, '/old-backlog');
    receiver.behave('/old-backlog', () => ({ status: 500 }));
    await db.query(
      `UPDATE webhook_endpoint_states SET failing_since = now() - interval '2 days'
        WHERE endpoint_id = $1`,
      [id],
    );
    // One message the old receiver failed three times, now waiting six hours for its next
    // step, and one whose schedule ran out against it since it began failing.
    for (const user of ['pu_backoff', 'pu_ran_out']) {
      await emitEvent(db, orgId, 'product_user.created', { product_end_user_id: user });
    }
    const messageOf = async (user: string): Promise<string> => {
      const { rows } = await db.query<{ id: string }>(
        `SELECT m.id FROM webhook_messages m JOIN webhook_deliveries d ON d.message_id = m.id
          WHERE d.endpoint_id = $1 AND m.payload::jsonb -> 'data' ->> 'product_end_user_id' = $2`,
        [id, user],
      );
      return rows[0]!.id;
    };
    const backoff = await messageOf('pu_backoff');
    const ranOut = await messageOf('pu_ran_out');
    await db.query(
      `UPDATE webhook_deliveries SET state = 'pending', retry_step = 3, attempt_count = 3,
              last_attempt_at = now() - interval '1 minute',
              next_attempt_at = now() + interval '6 hours'
        WHERE endpoint_id = $1 AND message_id = $2`,
      [id, backoff],
    );
    await db.query(
      `UPDATE webhook_deliveries SET state = 'failed', retry_step = 10, attempt_count = 11,
              last_attempt_at = now() - interval '1 hour'
        WHERE endpoint_id = $1 AND message_id = $2`,
      [id, ranOut],
    );
    const changed = await updateEndpoint(db as unknown as DbPool, settings, person, orgId, id, {
      url: receiver.endpoint('/new-backlog', [secrets.get(id)!]),
    });
    expect(isGwError(changed) ? changed : changed.status).toBe('enabled');
    startDispatcher();
    const received = await receiver.waitFor('/new-backlog', 'product_user.created', 2);
    expect(received.map((message) => message.payload.data.product_end_user_id).sort()).toEqual([
      'pu_backoff',
      'pu_ran_out',
    ]);
    expect(await deliveredAfter(backoff)).toEqual([200]);
    expect(await deliveredAfter(ranOut)).toEqual([200]);
    expect(receiver.ofType('/old-backlog', 'product_user.created')).toEqual([]);
  });

  it('a description changed alone keeps the window as it was', async () => {
    const orgId = await createOrganization(db, 'same-url');
    const id = await addEndpoint(orgId, '/same-receiver');
    const { rows } = await db.query<{ failing_since: Date }>(
      `UPDATE webhook_endpoint_states SET failing_since = now() - interval '30 hours'
        WHERE endpoint_id = $1 RETURNING failing_since`,
      [id],
    );
    const changed = await updateEndpoint(db as unknown as DbPool, settings, person, orgId, id, {
      description: 'renamed',
    });
    expect(isGwError(changed) ? changed : changed.failing_since).toEqual(rows[0]!.failing_since);
  });
});

describe('deleting an endpoint with a backlog', () => {
  it("holds up none of the organization's events while its deliveries go", async () => {
    const orgId = await createOrganization(db, 'delete-backlog');
    const id = await addEndpoint(orgId, '/deleted-backlog');
    await updateEndpoint(db as unknown as DbPool, settings, person, orgId, id, { enabled: false });
    for (const user of ['pu_gone_1', 'pu_gone_2', 'pu_gone_3']) {
      await emitEvent(db, orgId, 'product_user.created', { product_end_user_id: user });
    }
    // A delivery the deletion must wait for, standing for weeks of them (300,000 took 2.2 s
    // to delete here, and past DATABASE_TIMEOUT_MS the deletion failed).
    const holder = await pool('gw-test-holder').connect();
    await holder.query('BEGIN');
    await holder.query(
      'SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id DESC LIMIT 1 FOR UPDATE',
      [id],
    );
    let deleting: Promise<boolean> | undefined;
    let emitted: Promise<number> | undefined;
    try {
      deleting = deleteEndpoint(pool(ENABLING), person, orgId, id);
      await eventually(async () => ((await waitsForLock(ENABLING)) ? true : undefined));
      // The organization's events meanwhile: queued at once (for the endpoint, whose deletion
      // has not committed, too: they go with it).
      emitted = emitEvent(pool(EMITTING), orgId, 'product_user.created', {
        product_end_user_id: 'pu_meanwhile_delete',
      });
      expect(await unlessBlocked(emitted, EMITTING)).toBe(1);
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    expect(await deleting).toBe(true);
    await emitted;
    const { rows } = await db.query(
      `SELECT (SELECT count(*)::int FROM webhook_endpoints WHERE id = $1) AS endpoints,
              (SELECT count(*)::int FROM webhook_deliveries WHERE endpoint_id = $1) AS deliveries`,
      [id],
    );
    expect(rows).toEqual([{ endpoints: 0, deliveries: 0 }]);
  });
});
