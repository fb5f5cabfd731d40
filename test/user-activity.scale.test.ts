// "Your recent activity" on a large audit log (decisions 378, 386): a page reads the newest
// entries of each organization the user is a member of now, never what they did in one they
// left, nor anyone else's entries, however many there are. Counted with Postgres's own
// EXPLAIN ANALYZE on the query the route runs, against the real database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readUserActivity } from '../src/audit/audit-log.js';
import { isolatedContext } from './support/context.js';
import { createMember, uniqueEmail } from './support/dashboard.js';
import { runCli, seed, type SeededOrg } from './support/processes.js';
import { analyzedPlan, rowsVisited } from './support/query-plans.js';

const { env, db } = isolatedContext('user-activity-scale');
let member: SeededOrg;
let left: SeededOrg;
let userId: string;
const ENTRIES_ELSEWHERE = 20_000;

/** A page of the user's activity, and how many audit rows Postgres visited to answer it. */
async function pageAndRowsVisited(limit: number, beforeId: string | null) {
  let statement: { sql: string; params: readonly unknown[] } | undefined;
  const page = await readUserActivity(
    {
      query: ((sql: string, params: readonly unknown[]) => {
        statement = { sql, params };
        return db.query(sql, [...params]);
      }) as never,
    },
    userId,
    limit,
    beforeId,
  );
  const plan = await analyzedPlan(db, statement!.sql, statement!.params);
  return { page, visited: rowsVisited(plan, (table) => table === 'dashboard_audit_log') };
}

beforeAll(async () => {
  [member, left] = await Promise.all([
    seed(env, ['--name', 'Still a member']),
    seed(env, ['--name', 'Left long ago']),
  ]);
  const email = uniqueEmail('activity-scale');
  userId = (await createMember(env, email, member.org_id, 'admin')).id;
  const added = await runCli(
    ['admin', 'add-member', '--email', email, '--org-id', left.org_id, '--role', 'admin'],
    env,
  );
  expect(added.code).toBe(0);
  // Years of work in the organization they then left, and a colleague's in the one they stay in.
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id)
     SELECT $1, $2, 'app.rename', 'app', 'app_old_' || g FROM generate_series(1, $3::int) g`,
    [left.org_id, userId, ENTRIES_ELSEWHERE],
  );
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id)
     SELECT $1, 'usr_colleague_' || $2, 'app.rename', 'app', 'app_theirs_' || g
       FROM generate_series(1, $3::int) g`,
    [member.org_id, userId, ENTRIES_ELSEWHERE],
  );
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id)
     SELECT $1, $2, 'app.create', 'app', 'app_mine_' || g FROM generate_series(1, 3) g`,
    [member.org_id, userId],
  );
  await db.query('DELETE FROM org_memberships WHERE org_id = $1 AND user_id = $2', [
    left.org_id,
    userId,
  ]);
  await db.query('ANALYZE dashboard_audit_log');
});

afterAll(async () => {
  await db.query('DELETE FROM dashboard_audit_log WHERE org_id = ANY($1)', [
    [member.org_id, left.org_id],
  ]);
});

describe('a page of your activity on a large audit log', () => {
  it('reads only the newest entries of each organization you are a member of', async () => {
    const first = await pageAndRowsVisited(2, null);
    expect(first.page.rows.map((row) => [row.org_name, row.object_id])).toEqual([
      ['Still a member', 'app_mine_3'],
      ['Still a member', 'app_mine_2'],
    ]);
    expect(first.page.nextCursor).toBe(first.page.rows[1]!.id);
    // Two memberships (their own organization and this one), each read for a page of 2 and
    // the row that says there is more: not the 40,000 entries of the other organization and
    // of the colleague.
    expect(first.visited).toBeLessThanOrEqual(2 * 3);

    const second = await pageAndRowsVisited(2, first.page.nextCursor);
    expect(second.page.rows.map((row) => row.object_id)).toEqual(['app_mine_1']);
    expect(second.page.nextCursor).toBeNull();
    expect(second.visited).toBeLessThanOrEqual(2 * 3);
  });
});
