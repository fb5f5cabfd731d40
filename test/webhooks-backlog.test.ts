// The webhook backlog (gw_webhook_deliveries_due): deliveries due and not yet made. A disabled
// endpoint's deliveries wait on purpose (until it is enabled again, decision 504): they are
// no backlog, and no number of dispatchers would send them. A database of its own and no
// gateway, so nothing delivers while it counts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveriesDue } from '../src/webhooks/backlog.js';
import { emitEvents } from '../src/webhooks/outbox.js';
import { isolatedContext } from './support/context.js';

const { prefix, db } = isolatedContext('wh-backlog', { ownDatabase: true });
const orgId = `org_${prefix.replace(/[^A-Za-z0-9]/g, '')}`.slice(0, 40);

async function endpoint(id: string, status: 'enabled' | 'disabled', reason: string | null) {
  await db.query(
    `INSERT INTO webhook_endpoints (id, org_id, url, status, disabled_reason, disabled_at, secret_sealed)
     VALUES ($1, $2, 'https://example.com/hooks', $3, $4,
             CASE WHEN $3 = 'disabled' THEN now() END, 'not a secret')`,
    [id, orgId, status, reason],
  );
  await db.query('INSERT INTO webhook_endpoint_states (endpoint_id) VALUES ($1)', [id]);
}

beforeAll(async () => {
  await db.query(`INSERT INTO organizations (id, name) VALUES ($1, 'backlog')`, [orgId]);
  await endpoint('wh_backlogenabled', 'enabled', null);
  await endpoint('wh_backlogfailing', 'disabled', 'failing');
  await endpoint('wh_backlogmanual', 'disabled', 'manual');
});

afterAll(async () => {
  await db.query('DELETE FROM webhook_endpoints WHERE org_id = $1', [orgId]);
  await db.query('DELETE FROM webhook_messages WHERE org_id = $1', [orgId]);
  await db.query('DELETE FROM organizations WHERE id = $1', [orgId]);
});

describe('the webhook backlog', () => {
  it("counts the enabled endpoints' due deliveries, not those waiting for a disabled endpoint", async () => {
    const queued = await emitEvents(
      db,
      ['key_1', 'key_2', 'key_3'].map((id) => ({
        orgId,
        type: 'api_key.created' as const,
        data: { id },
      })),
    );
    // Three for each endpoint: the disabled ones' wait for them.
    expect(queued).toBe(9);
    const { rows } = await db.query<{ endpoint_id: string; n: number }>(
      `SELECT endpoint_id, count(*)::int AS n FROM webhook_deliveries
        WHERE state = 'pending' AND next_attempt_at <= now() GROUP BY endpoint_id ORDER BY 1`,
    );
    expect(rows).toEqual([
      { endpoint_id: 'wh_backlogenabled', n: 3 },
      { endpoint_id: 'wh_backlogfailing', n: 3 },
      { endpoint_id: 'wh_backlogmanual', n: 3 },
    ]);
    expect(await webhookDeliveriesDue(db)).toBe(3);
  });
});
