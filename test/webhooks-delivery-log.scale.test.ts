// An endpoint's delivery log read by status, and its messages redelivered since a time, on a
// log of months (decision 568): `GET …/deliveries?status=` (and `gw webhook deliveries
// --status`) reads the few deliveries of that status it shows, and `redeliver` with `since`
// (`gw webhook redeliver --since`) the deliveries since then — neither the endpoint's whole
// log (through webhook_deliveries_created_id since migration 078). Counted with Postgres's own
// EXPLAIN ANALYZE on the statements the service runs, against the real database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import { listDeliveries, redeliver } from '../src/webhooks/delivery-log.js';
import { isolatedContext } from './support/context.js';
import { analyzedPlan, indexesUsed, rowsVisited } from './support/query-plans.js';

// A database of its own: no other file's dispatcher sends the deliveries made due here.
const context = isolatedContext('wh-log-scale', { ownDatabase: true });
const { db } = context;
/** Months of delivered messages: the log's bulk. */
const OLD = 200_000;
/** Failed among them, spread over the months. */
const FAILED = 5;
/** Messages of the last hour. */
const RECENT = 20;
const endpointId = 'wh_log_scale';
let orgId: string;

interface Statement {
  readonly sql: string;
  readonly params: readonly unknown[];
}

beforeAll(async () => {
  orgId = await createOrganization(db, 'Busy log');
  await db.query(
    `INSERT INTO webhook_endpoints (id, org_id, url, secret_sealed)
     VALUES ($1, $2, 'https://hooks.example.com/busy', 'sealed')`,
    [endpointId, orgId],
  );
  await db.query('INSERT INTO webhook_endpoint_states (endpoint_id) VALUES ($1)', [endpointId]);
  await db.query(
    `INSERT INTO webhook_messages (id, org_id, event_type, payload, created_at)
     SELECT 'msg_scale_' || g, $1, 'webhook.test', '{"type":"webhook.test"}',
            CASE WHEN g <= $2 THEN now() - interval '90 days' + g * interval '30 seconds'
                 ELSE now() - interval '30 minutes' END
       FROM generate_series(1, $2::int + $3::int) g`,
    [orgId, OLD, RECENT],
  );
  await db.query(
    `INSERT INTO webhook_deliveries
       (message_id, endpoint_id, message_seq, state, attempt_count, delivered_at, created_at)
     SELECT m.id, $1, m.seq, 'delivered', 1, m.created_at, m.created_at
       FROM webhook_messages m WHERE m.org_id = $2 ORDER BY m.seq`,
    [endpointId, orgId],
  );
  await db.query(
    `UPDATE webhook_deliveries SET state = 'failed', delivered_at = NULL, retry_step = 10
      WHERE endpoint_id = $1
        AND message_id IN (SELECT 'msg_scale_' || (g * ($2::int / $3::int))
                             FROM generate_series(1, $3::int) g)`,
    [endpointId, OLD, FAILED],
  );
  await db.query('ANALYZE webhook_deliveries, webhook_messages');
}, 120_000);

afterAll(async () => {
  await db.query('DELETE FROM webhook_endpoints WHERE id = $1', [endpointId]);
  await db.query('DELETE FROM webhook_messages WHERE org_id = $1', [orgId]);
});

/** What the plans of `statements` read of webhook_deliveries, and the indexes they used. */
async function reads(statements: readonly Statement[]): Promise<{
  visited: number;
  indexes: Set<string>;
}> {
  let visited = 0;
  const indexes = new Set<string>();
  for (const { sql, params } of statements) {
    // EXPLAIN ANALYZE runs the statement: a write's is rolled back.
    const client = await (db as unknown as DbPool).connect();
    try {
      await client.query('BEGIN');
      const plan = await analyzedPlan(client, sql, params);
      visited += rowsVisited(plan, (table) => table === 'webhook_deliveries');
      for (const index of indexesUsed(plan)) indexes.add(index);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  }
  return { visited, indexes };
}

describe('the delivery log of an endpoint with months of messages', () => {
  it('read by status, reads the deliveries of that status it shows', async () => {
    const statements: Statement[] = [];
    const recording = {
      query: ((sql: string, params: readonly unknown[]) => {
        statements.push({ sql, params });
        return db.query(sql, [...params]);
      }) as never,
    } as unknown as DbPool;
    const page = await listDeliveries(recording, orgId, endpointId, {
      limit: 50,
      before: null,
      state: 'failed',
    });
    expect('data' in page ? page.data.map((row) => row.status) : page).toEqual(
      Array(FAILED).fill('failed'),
    );
    const { visited, indexes } = await reads(statements);
    // The five failed ones: not the 200,000 delivered.
    expect(visited).toBeLessThanOrEqual(FAILED);
    expect(indexes).toContain('webhook_deliveries_log_state');
  });

  it('redelivered since a time, reads the deliveries since then', async () => {
    const statements: Statement[] = [];
    const own = createDbPool(context.env.DATABASE_URL!, 1);
    try {
      // The service's own statements, recorded on the connection it takes.
      const recording = {
        connect: async () => {
          const client = await own.connect();
          const query = client.query.bind(client) as (sql: string, params?: unknown[]) => unknown;
          client.query = ((sql: string, params?: unknown[]) => {
            statements.push({ sql, params: params ?? [] });
            return query(sql, params);
          }) as never;
          return client;
        },
      } as unknown as DbPool;
      const since = new Date(Date.now() - 3_600_000);
      expect(await redeliver(recording, { userId: 'test' }, orgId, endpointId, { since })).toEqual({
        redelivered: RECENT,
      });
    } finally {
      await own.end();
    }
    const update = statements.filter(({ sql }) => /UPDATE webhook_deliveries/.test(sql));
    expect(update).toHaveLength(1);
    const { visited, indexes } = await reads(update);
    // The twenty of the last hour: not the 200,000 before them. Each counted four times: found
    // through the index, locked by id, taken by id for the UPDATE, and the row the UPDATE
    // returns (the batch of decision 577, which reads from where the last one ended).
    expect(visited).toBeLessThanOrEqual(4 * RECENT);
    expect(indexes).toContain('webhook_deliveries_created_id');
  });
});
