// "Made by your account recently" on a large audit log (decision 419): the review reads, per
// organization the user is a member of, the user's own entries from the window's start on —
// not their older history there, nor anyone else's entries, however many there are. Counted
// with Postgres's own EXPLAIN ANALYZE on the statements the route runs, against the real
// database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMadeByAccount } from '../src/accounts/made-by-account.js';
import { isolatedContext } from './support/context.js';
import { createMember, uniqueEmail } from './support/dashboard.js';
import { seed, type SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('made-recently-scale');
let busy: SeededOrg;
let userId: string;
let keyId: string;
const OLD_ENTRIES = 20_000;
const DAY_MS = 86_400_000;

interface PlanNode {
  readonly 'Relation Name'?: string;
  readonly 'Actual Rows': number;
  readonly 'Actual Loops': number;
  readonly 'Rows Removed by Filter'?: number;
  readonly 'Rows Removed by Index Recheck'?: number;
  readonly Plans?: readonly PlanNode[];
}

/** Audit log rows the plan's scans of dashboard_audit_log visited. */
function auditRowsVisited(node: PlanNode): number {
  const own =
    node['Relation Name'] === 'dashboard_audit_log'
      ? (node['Actual Rows'] +
          (node['Rows Removed by Filter'] ?? 0) +
          (node['Rows Removed by Index Recheck'] ?? 0)) *
        node['Actual Loops']
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + auditRowsVisited(child), 0);
}

beforeAll(async () => {
  busy = await seed(env, ['--name', 'Busy for years']);
  userId = (await createMember(env, uniqueEmail('made-scale'), busy.org_id, 'admin')).id;
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM api_keys WHERE org_id = $1 LIMIT 1',
    [busy.org_id],
  );
  keyId = rows[0]!.id;
  // The log as years of use leave it: what the organization had, then the user's keys made
  // long ago (numbered in the order they were made), then a colleague's work this month.
  await db.query(
    `UPDATE dashboard_audit_log SET created_at = now() - interval '400 days' WHERE org_id = $1`,
    [busy.org_id],
  );
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id, created_at)
     SELECT $1, $2, 'api_key.create', 'api_key', 'key_old_' || g,
            now() - interval '300 days' + g * interval '10 minutes'
       FROM generate_series(1, $3::int) g`,
    [busy.org_id, userId, OLD_ENTRIES],
  );
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id)
     SELECT $1, 'usr_colleague_' || $2, 'api_key.create', 'api_key', 'key_theirs_' || g
       FROM generate_series(1, $3::int) g`,
    [busy.org_id, userId, OLD_ENTRIES],
  );
  // and, this month, the user made the seeded key (as its audit entry says)
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id)
     VALUES ($1, $2, 'api_key.create', 'api_key', $3)`,
    [busy.org_id, userId, keyId],
  );
  await db.query('ANALYZE dashboard_audit_log');
});

afterAll(async () => {
  await db.query('DELETE FROM dashboard_audit_log WHERE org_id = $1', [busy.org_id]);
});

describe('the review on a large audit log', () => {
  it("reads the user's entries of the window only, in each organization they are in", async () => {
    const statements: { sql: string; params: readonly unknown[] }[] = [];
    const made = await readMadeByAccount(
      {
        query: ((sql: string, params: readonly unknown[]) => {
          statements.push({ sql, params });
          return db.query(sql, [...params]);
        }) as never,
      },
      userId,
      new Date(Date.now() - 30 * DAY_MS),
      200,
    );
    expect(made.rows.map((row) => [row.kind, row.id, row.made_as])).toEqual([
      ['api_key', keyId, 'created'],
    ]);
    let visited = 0;
    for (const statement of statements) {
      const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`,
        [...statement.params],
      );
      visited += auditRowsVisited(rows[0]!['QUERY PLAN'][0].Plan);
    }
    // Two statements, two memberships (their own organization and this one): per membership
    // the window's first entry of the organization and the user's one entry since. Not the
    // 20,000 old entries of theirs, nor the colleague's 20,000 of this month.
    expect(visited).toBeLessThanOrEqual(2 * 2 * 2);
  });
});
