// Redelivery since a time over a large delivery log (decision 577): `POST …/redeliver
// {"since"}` (and `gw webhook redeliver --since`) rewrites the deliveries since then in batches,
// each its own short transaction, so a range of 200,000 is redelivered by a gateway whose
// statements may run 2 s (one statement over all of them ran past it: 503, nothing redelivered),
// the call's one audit entry counts them, a dispatcher can claim a redelivered message while
// the call is still rewriting the rest, a delivery an attempt holds is queued after it without
// holding up the others, and a call cut off part-way says how to go on. Against the real
// Postgres, in a database of its own (no other file's dispatcher sends what is made due here).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { createDbPool, type DbClient, type DbPool } from '../src/db/pool.js';
import { redeliver } from '../src/webhooks/delivery-log.js';
import { REDELIVERY_BATCH } from '../src/webhooks/redelivery-batches.js';
import { isolatedContext } from './support/context.js';
import { createMember, signInTo, uniqueEmail } from './support/dashboard.js';
import type { ErrorBody } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { eventually } from './support/services.js';

const context = isolatedContext('wh-redeliver-scale', { ownDatabase: true });
const { db } = context;
const env = {
  ...context.env,
  // Each statement of the gateway's pools is cancelled after 2 s (one UPDATE of the 200,000
  // takes several on this machine); no dispatcher: the rows stay as the redelivery left them.
  DATABASE_TIMEOUT_MS: '2000',
  WEBHOOK_DELIVERY_CONCURRENCY: '0',
};
/** Deliveries since the time asked. */
const SINCE_COUNT = 200_000;
/** Deliveries from before it, which stay as they are. */
const BEFORE_COUNT = 50;
const adminEmail = uniqueEmail('wh-redeliver-admin');
const outsiderEmail = uniqueEmail('wh-redeliver-outsider');
let gateway: GatewayProcess;
let tenant: SeededOrg;
let other: SeededOrg;
const endpointId = 'wh_redeliver_scale';

/**
 * An endpoint (enabled, its secret nothing a dispatcher could open) with `before` deliveries
 * two days old and `since` made in the last hour, most delivered, some failed, some waiting on
 * their backoff. Many share a created_at, as one transaction's messages do (777 per instant:
 * batches end inside such groups).
 */
async function endpointWithLog(
  orgId: string,
  id: string,
  counts: { before: number; since: number },
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_endpoints (id, org_id, url, secret_sealed)
     VALUES ($1, $2, 'https://hooks.example.com/busy', 'sealed')`,
    [id, orgId],
  );
  await db.query('INSERT INTO webhook_endpoint_states (endpoint_id) VALUES ($1)', [id]);
  await db.query(
    `INSERT INTO webhook_messages (id, org_id, event_type, payload, created_at)
     SELECT 'msg_' || $3 || '_' || g, $1, 'webhook.test', '{"type":"webhook.test"}',
            CASE WHEN g <= $2 THEN now() - interval '2 days'
                 ELSE now() - interval '1 hour' + (g / 777) * interval '1 ms' END
       FROM generate_series(1, $2::int + $4::int) g`,
    [orgId, counts.before, id.replaceAll('_', ''), counts.since],
  );
  await db.query(
    `INSERT INTO webhook_deliveries (message_id, endpoint_id, message_seq, state, attempt_count,
                                     retry_step, next_attempt_at, delivered_at, created_at)
     SELECT m.id, $1, m.seq, s.state, 3, s.retry_step,
            now() + interval '6 hours', CASE s.state WHEN 'delivered' THEN m.created_at END,
            m.created_at
       FROM webhook_messages m,
            LATERAL (SELECT CASE WHEN m.seq % 10 = 0 THEN 'failed'
                                 WHEN m.seq % 10 = 1 THEN 'pending'
                                 ELSE 'delivered' END AS state,
                            CASE WHEN m.seq % 10 = 0 THEN 12
                                 WHEN m.seq % 10 = 1 THEN 3 ELSE 0 END AS retry_step) s
      WHERE m.org_id = $2 AND m.id LIKE 'msg_' || $3 || '_%'`,
    [id, orgId, id.replaceAll('_', '')],
  );
  await db.query('ANALYZE webhook_deliveries, webhook_messages');
}

/** The endpoint's deliveries by whether they were made since `since` and what they are now. */
async function logState(
  id: string,
  since: Date,
): Promise<Array<{ since: boolean; due_from_start: boolean; deliveries: number }>> {
  const { rows } = await db.query<{ since: boolean; due_from_start: boolean; deliveries: number }>(
    `SELECT created_at >= $2 AS since,
            (state = 'pending' AND retry_step = 0 AND next_attempt_at <= now()) AS due_from_start,
            count(*)::int AS deliveries
       FROM webhook_deliveries WHERE endpoint_id = $1
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [id, since],
  );
  return rows;
}

/**
 * logState of an endpoint whose `before` older deliveries stayed as they were and whose `since`
 * deliveries since the time were all queued again from the start of their schedule.
 */
const queuedAgain = (before: number, since: number) => [
  { since: false, due_from_start: false, deliveries: before },
  { since: true, due_from_start: true, deliveries: since },
];

/** redeliveryAudit of one call since `since` that queued `count` again. */
const oneRedeliveryAudited = (since: Date, count: number) => [
  { user_id: 'test', details: { since: since.toISOString(), redelivered: count } },
];

async function redeliveryAudit(
  id: string,
): Promise<Array<{ user_id: string; details: Record<string, unknown> }>> {
  const { rows } = await db.query<{ user_id: string; details: Record<string, unknown> }>(
    `SELECT user_id, details FROM dashboard_audit_log
      WHERE action = 'webhook.redeliver' AND object_id = $1 ORDER BY id`,
    [id],
  );
  return rows;
}

beforeAll(async () => {
  gateway = await startGateway(env);
  [tenant, other] = await Promise.all([seed(env), seed(env)]);
  await createMember(env, adminEmail, tenant.org_id, 'admin');
  await createMember(env, outsiderEmail, other.org_id, 'owner');
  await endpointWithLog(tenant.org_id, endpointId, {
    before: BEFORE_COUNT,
    since: SINCE_COUNT,
  });
}, 240_000);

afterAll(async () => {
  await gateway?.stop();
});

describe('redelivery since a time of 200,000 deliveries', () => {
  const since = new Date(Date.now() - 2 * 3_600_000);

  it("answers 404 through another organization's path and changes nothing", async () => {
    const before = await logState(endpointId, since);
    const outsider = await signInTo(gateway, outsiderEmail);
    const answer = await outsider.post<ErrorBody>(
      `/dashboard/api/orgs/${other.org_id}/webhooks/${endpointId}/redeliver`,
      { since: since.toISOString() },
    );
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe('gw_not_found');
    expect(await logState(endpointId, since)).toEqual(before);
    expect(await redeliveryAudit(endpointId)).toEqual([]);
  });

  it('queues every one again from the start of its schedule, under a 2 s statement bound, audited once', async () => {
    const admin = await signInTo(gateway, adminEmail);
    const answer = await admin.post<{ redelivered: number }>(
      `/dashboard/api/orgs/${tenant.org_id}/webhooks/${endpointId}/redeliver`,
      { since: since.toISOString() },
    );
    // Before: 503 gw_unavailable (the one UPDATE cancelled at 2 s), nothing rewritten.
    expect(answer).toMatchObject({ status: 202, body: { redelivered: SINCE_COUNT } });
    // The older ones as they were: delivered, failed, or waiting on their backoff.
    expect(await logState(endpointId, since)).toEqual(queuedAgain(BEFORE_COUNT, SINCE_COUNT));
    const audit = await redeliveryAudit(endpointId);
    expect(audit).toEqual([
      {
        user_id: expect.stringMatching(/^usr_/) as unknown as string,
        details: { since: since.toISOString(), redelivered: SINCE_COUNT },
      },
    ]);
  }, 240_000);
});

describe('a dispatcher during a redelivery since a time', () => {
  it('claims a message already redelivered while the call still rewrites the rest', async () => {
    const orgId = await createOrganization(db, 'Claimed meanwhile');
    const id = 'wh_redeliver_claims';
    const count = 3 * REDELIVERY_BATCH + 10;
    await endpointWithLog(orgId, id, { before: 5, since: count });
    const since = new Date(Date.now() - 2 * 3_600_000);
    /** What a dispatcher's claim got each time the call was about to commit a transaction. */
    const claims: Array<string | null> = [];
    const own = createDbPool(context.env.DATABASE_URL!, 1);
    try {
      // The service's connection, whose COMMITs are held until another connection has tried
      // a dispatcher's claim: the call's transaction is open then, holding what it rewrote.
      const wrapped = new WeakSet<DbClient>();
      const recording = {
        connect: async () => {
          const client = await own.connect();
          // The pool's one connection, handed out again for each transaction: wrapped once.
          if (wrapped.has(client)) return client;
          wrapped.add(client);
          const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
          client.query = (async (...args: unknown[]) => {
            const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text;
            if (text === 'COMMIT') claims.push(await claimDue(id));
            return query(...args);
          }) as never;
          return client;
        },
      } as unknown as DbPool;
      expect(await redeliver(recording, { userId: 'test' }, orgId, id, { since })).toEqual({
        redelivered: count,
      });
    } finally {
      await own.end();
    }
    // Four transactions: three batches of 1,000 and the last (ten). Before, one, whose claim
    // found nothing: what it rewrote was not committed, and what it held could not be had.
    expect(claims).toHaveLength(4);
    expect(claims[0]).toBeNull();
    // Each later one got a delivery the call had rewritten and committed, without waiting.
    expect(claims.slice(1).every((claimed) => claimed?.startsWith(`msg_whredeliverclaims_`))).toBe(
      true,
    );
    expect(await logState(id, since)).toEqual(queuedAgain(5, count));
    expect(await redeliveryAudit(id)).toEqual(oneRedeliveryAudited(since, count));
  }, 120_000);
});

describe('a redelivery since a time meeting an attempt in flight', () => {
  it('rewrites and commits everything else first, then what the attempt left', async () => {
    const orgId = await createOrganization(db, 'Attempt in flight');
    const id = 'wh_redeliver_held';
    const count = 2 * REDELIVERY_BATCH + 10;
    await endpointWithLog(orgId, id, { before: 5, since: count });
    const since = new Date(Date.now() - 2 * 3_600_000);
    // An attempt: its transaction holds its delivery's row while it sends (the dispatcher's
    // claim takes it FOR UPDATE), here one of the first batch's.
    const attempt = await (db as unknown as DbPool).connect();
    let redelivery: ReturnType<typeof redeliver> | undefined;
    try {
      await attempt.query('BEGIN');
      const { rows: heldRows } = await attempt.query<{ id: string }>(
        `SELECT id::text FROM webhook_deliveries
          WHERE endpoint_id = $1 AND message_id = 'msg_whredeliverheld_500' FOR UPDATE`,
        [id],
      );
      expect(heldRows).toHaveLength(1);
      redelivery = redeliver(db as unknown as DbPool, { userId: 'test' }, orgId, id, { since });
      // The call waits for the attempt at last…
      await eventually(async () => {
        const { rows } = await db.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return rows[0]!.waiting > 0 ? true : undefined;
      }, 60_000);
      // …with all the rest rewritten and committed meanwhile (before: the first batch waited,
      // holding its other 999, and nothing of the call was committed), and counted.
      expect(await logState(id, since)).toEqual([
        { since: false, due_from_start: false, deliveries: 5 },
        { since: true, due_from_start: false, deliveries: 1 },
        { since: true, due_from_start: true, deliveries: count - 1 },
      ]);
      expect(await redeliveryAudit(id)).toEqual(oneRedeliveryAudited(since, count - 1));
      // The attempt is recorded: delivered.
      await attempt.query(
        `UPDATE webhook_deliveries SET state = 'delivered', delivered_at = now(), attempt_count = 4
          WHERE id = $1`,
        [heldRows[0]!.id],
      );
      await attempt.query('COMMIT');
    } finally {
      await attempt.query('ROLLBACK').catch(() => undefined);
      attempt.release();
    }
    // Then the call queues that message again too.
    expect(await redelivery).toEqual({ redelivered: count });
    expect(await logState(id, since)).toEqual(queuedAgain(5, count));
    expect(await redeliveryAudit(id)).toEqual(oneRedeliveryAudited(since, count));
  }, 120_000);
});

describe('a redelivery since a time cut off by Postgres', () => {
  it('keeps what it committed, audited, and says which since goes on from there', async () => {
    const orgId = await createOrganization(db, 'Cut off');
    const id = 'wh_redeliver_stopped';
    const count = 2 * REDELIVERY_BATCH + 500;
    await endpointWithLog(orgId, id, { before: 5, since: count });
    const since = new Date(Date.now() - 2 * 3_600_000);
    // A delivery of the second batch (the third instant's messages: past the first 1,000) takes
    // longer to rewrite than the pool lets a statement run.
    await db.query(
      `CREATE FUNCTION test_slow_redelivery() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_sleep(2); RETURN NEW; END $$`,
    );
    await db.query(
      `CREATE TRIGGER test_slow_redelivery BEFORE UPDATE ON webhook_deliveries FOR EACH ROW
       WHEN (NEW.message_id = 'msg_whredeliverstopped_2000') EXECUTE FUNCTION test_slow_redelivery()`,
    );
    const bounded = createDbPool(context.env.DATABASE_URL!, 1, 500);
    let cutOff;
    try {
      cutOff = await redeliver(bounded, { userId: 'test' }, orgId, id, { since });
    } finally {
      await bounded.end();
      await db.query('DROP TRIGGER test_slow_redelivery ON webhook_deliveries');
      await db.query('DROP FUNCTION test_slow_redelivery()');
    }
    expect(cutOff).toMatchObject({ code: 'gw_unavailable', status: 503 });
    const message = (cutOff as { message: string }).message;
    const resume =
      /^redelivered 1000 of the messages since \S+, up to (\S+), before Postgres failed: redeliver since \1 for the rest \(the messages of that millisecond go again\)$/.exec(
        message,
      );
    expect(resume, message).not.toBeNull();
    expect(await logState(id, since)).toEqual([
      { since: false, due_from_start: false, deliveries: 5 },
      { since: true, due_from_start: false, deliveries: count - REDELIVERY_BATCH },
      { since: true, due_from_start: true, deliveries: REDELIVERY_BATCH },
    ]);
    // The log says what was done: the first batch, committed.
    expect(await redeliveryAudit(id)).toEqual(oneRedeliveryAudited(since, REDELIVERY_BATCH));

    const from = new Date(resume![1]!);
    const { rows } = await db.query<{ left: number }>(
      'SELECT count(*)::int AS left FROM webhook_deliveries WHERE endpoint_id = $1 AND created_at >= $2',
      [id, from],
    );
    // The rest, and the few of the first batch made in that millisecond again.
    expect(rows[0]!.left).toBeGreaterThanOrEqual(count - REDELIVERY_BATCH);
    expect(rows[0]!.left).toBeLessThan(count - REDELIVERY_BATCH + 777);
    expect(
      await redeliver(db as unknown as DbPool, { userId: 'test' }, orgId, id, { since: from }),
    ).toEqual({
      redelivered: rows[0]!.left,
    });
    expect(await logState(id, since)).toEqual(queuedAgain(5, count));
  }, 120_000);
});

/**
 * The dispatcher's claim of an endpoint's next due delivery (src/webhooks/dispatcher.ts, without
 * the lane), NOWAIT: a delivery a transaction holds fails it rather than waiting. Rolled back.
 */
async function claimDue(id: string): Promise<string | null> {
  const client: DbClient = await (db as unknown as DbPool).connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ message_id: string }>(
      `SELECT d.message_id FROM webhook_deliveries d
        WHERE d.endpoint_id = $1 AND d.state = 'pending' AND d.next_attempt_at <= now()
        ORDER BY d.message_seq LIMIT 1
        FOR UPDATE OF d NOWAIT`,
      [id],
    );
    return rows[0]?.message_id ?? null;
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}
