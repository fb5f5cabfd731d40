// "Made by your account recently" on a large audit log (decisions 419, 421): the review reads,
// per organization the user is a member of, the user's own entries from the window's start on
// — not their older history there, nor anyone else's entries, however many there are — and
// the invitations, OAuth clients and webhook endpoints those entries name, not the
// organization's others. Counted
// with Postgres's own EXPLAIN ANALYZE on the statements the route runs, against the real
// database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMadeByAccount } from '../src/accounts/made-by-account.js';
import { isolatedContext } from './support/context.js';
import { createMember, uniqueEmail } from './support/dashboard.js';
import { seed, type SeededOrg } from './support/processes.js';
import { analyzedPlan, rowsVisited } from './support/query-plans.js';

const { env, db } = isolatedContext('made-recently-scale');
let busy: SeededOrg;
let userId: string;
let keyId: string;
let colleagueId: string;
let joinedId: string;
let raisedId: string;
const OLD_ENTRIES = 20_000;
/** Other users' entries, long ago: the log's bulk. */
const OTHERS_ENTRIES = 200_000;
/** A colleague's pending invitations, OAuth clients and webhook endpoints, of this month. */
const THEIRS = 5_000;
/** The tables the review reads objects from besides the log. */
const OBJECT_TABLES = new Set(['org_invitations', 'oauth_clients', 'webhook_endpoints']);
/** Where a member the account let in or raised is read (decision 477). */
const MEMBER_TABLES = new Set(['org_memberships', 'dashboard_users']);
const DAY_MS = 86_400_000;

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
  // Everyone else's entries, as a shared gateway's log holds them: the user's are a small part
  // of it, as they are in any log the review reads in production (on a log holding little but
  // theirs, Postgres rightly scans by id instead).
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id, created_at)
     SELECT $1, 'usr_others_' || (g % 2000), 'app.create', 'app', 'app_others_' || g,
            now() - interval '400 days'
       FROM generate_series(1, $2::int) g`,
    [busy.org_id, OTHERS_ENTRIES],
  );
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id)
     SELECT $1, 'usr_colleague_' || $2, 'api_key.create', 'api_key', 'key_theirs_' || g
       FROM generate_series(1, $3::int) g`,
    [busy.org_id, userId, OLD_ENTRIES],
  );
  // The colleague's invitations, OAuth clients and webhook endpoints of this month (their
  // audit entries are not needed: the review reads objects only from the user's entries).
  const colleague = `usr_colleague_${userId}`;
  await db.query(
    `INSERT INTO org_invitations (id, org_id, email, role, invited_by, expires_at)
     SELECT 'inv_theirs_' || g, $1, 'theirs' || g || '@example.com', 'admin', $2,
            now() + interval '7 days'
       FROM generate_series(1, $3::int) g`,
    [busy.org_id, colleague, THEIRS],
  );
  await db.query(
    `INSERT INTO oauth_clients (id, org_id, app_id, name, client_secret_hash, redirect_uris)
     SELECT 'gw_client_theirs_' || g, $1, $2, 'theirs', 'hash', ARRAY['https://example.com/cb']
       FROM generate_series(1, $3::int) g`,
    [busy.org_id, busy.app_id, THEIRS],
  );
  await db.query(
    `INSERT INTO webhook_endpoints (id, org_id, url, secret_sealed)
     SELECT 'wh_theirs_' || g, $1, 'https://hooks.example.com/' || g, 'sealed'
       FROM generate_series(1, $2::int) g`,
    [busy.org_id, THEIRS],
  );
  // and the OAuth approvals a colleague who signs in to apps all day gave this month (an
  // approval names its user in its connection: it has no audit entry to start from)
  colleagueId = (await createMember(env, uniqueEmail('made-scale-colleague'), busy.org_id, 'admin'))
    .id;
  await db.query(
    `INSERT INTO app_connections (id, org_id, app_id, name, oauth_client_id, connected_by_user_id)
     SELECT 'conn_theirs_' || g, $1, $2, 'theirs', 'gw_client_theirs_' || g, $3
       FROM generate_series(1, $4::int) g`,
    [busy.org_id, busy.app_id, colleagueId, THEIRS],
  );
  // and the members the colleague let in this month, through invitations they accepted (5,000
  // of the organization's memberships), whose roles the colleague also raised
  await db.query(
    `INSERT INTO dashboard_users (id, email, password_hash, personal_org_id)
     SELECT 'usr_theirs_' || g || '_' || $2, 'member' || g || '.' || $2 || '@example.com', 'x', $1
       FROM generate_series(1, $3::int) g`,
    [busy.org_id, userId, THEIRS],
  );
  await db.query(
    `INSERT INTO org_memberships (org_id, user_id, role)
     SELECT $1, 'usr_theirs_' || g || '_' || $2, 'admin' FROM generate_series(1, $3::int) g`,
    [busy.org_id, userId, THEIRS],
  );
  await db.query(
    `INSERT INTO org_invitations
       (id, org_id, email, role, invited_by, expires_at, status, responded_at, responded_by)
     SELECT 'inv_accepted_' || g, $1, 'member' || g || '.' || $2 || '@example.com', 'member', $3,
            now() + interval '7 days', 'accepted', now(), 'usr_theirs_' || g || '_' || $2
       FROM generate_series(1, $4::int) g`,
    [busy.org_id, userId, colleague, THEIRS],
  );
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id, details)
     SELECT $1, $3, 'member.change_role', 'member', 'usr_theirs_' || g || '_' || $2,
            '{"from":"member","to":"admin"}'
       FROM generate_series(1, $4::int) g`,
    [busy.org_id, userId, colleague, THEIRS],
  );
  // and, this month, the user made the seeded key, one invitation, one OAuth client and one
  // webhook endpoint (as their audit entries say), let one member in (an invitation accepted)
  // and raised another's role
  await db.query(
    `INSERT INTO org_invitations (id, org_id, email, role, invited_by, expires_at)
     VALUES ('inv_mine_' || $2, $1, 'mine@example.com', 'admin', $2, now() + interval '7 days')`,
    [busy.org_id, userId],
  );
  await db.query(
    `INSERT INTO oauth_clients (id, org_id, app_id, name, client_secret_hash, redirect_uris)
     VALUES ('gw_client_mine_' || $2, $1, $3, 'mine', 'hash', ARRAY['https://example.com/cb'])`,
    [busy.org_id, userId, busy.app_id],
  );
  await db.query(
    `INSERT INTO webhook_endpoints (id, org_id, url, secret_sealed)
     VALUES ('wh_mine_' || $2, $1, 'https://hooks.example.com/mine', 'sealed')`,
    [busy.org_id, userId],
  );
  await db.query(
    `INSERT INTO app_connections (id, org_id, app_id, name, oauth_client_id, connected_by_user_id)
     VALUES ('conn_mine_' || $2, $1, $3, 'mine', 'gw_client_mine_' || $2, $2)`,
    [busy.org_id, userId, busy.app_id],
  );
  // (the first two of the colleague's members: one joined through the user's invitation, the
  // other raised by the user too)
  joinedId = `usr_theirs_1_${userId}`;
  raisedId = `usr_theirs_2_${userId}`;
  await db.query(
    `INSERT INTO org_invitations
       (id, org_id, email, role, invited_by, expires_at, status, responded_at, responded_by,
        created_at)
     SELECT 'inv_joined_' || $2, $1, 'joined@example.com', 'admin', $2, now() + interval '7 days',
            'accepted', m.created_at, m.user_id, m.created_at
       FROM org_memberships m WHERE m.org_id = $1 AND m.user_id = $3`,
    [busy.org_id, userId, joinedId],
  );
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id, details)
     VALUES ($1, $2, 'api_key.create', 'api_key', $3, '{}'),
            ($1, $2, 'invitation.create', 'invitation', 'inv_mine_' || $2, '{}'),
            ($1, $2, 'oauth_client.create', 'oauth_client', 'gw_client_mine_' || $2, '{}'),
            ($1, $2, 'webhook.create', 'webhook', 'wh_mine_' || $2, '{}'),
            ($1, $2, 'invitation.create', 'invitation', 'inv_joined_' || $2, '{}'),
            ($1, $2, 'member.change_role', 'member', $4, '{"from":"member","to":"admin"}')`,
    [busy.org_id, userId, keyId, raisedId],
  );
  await db.query(
    'ANALYZE dashboard_audit_log, org_invitations, oauth_clients, webhook_endpoints, app_connections, org_memberships, dashboard_users',
  );
});

afterAll(async () => {
  await db.query('DELETE FROM app_connections WHERE org_id = $1 AND oauth_client_id IS NOT NULL', [
    busy.org_id,
  ]);
  for (const table of ['dashboard_audit_log', 'org_invitations', 'oauth_clients']) {
    await db.query(`DELETE FROM ${table} WHERE org_id = $1`, [busy.org_id]);
  }
  await db.query('DELETE FROM webhook_endpoints WHERE org_id = $1', [busy.org_id]);
  await db.query(`DELETE FROM dashboard_users WHERE id LIKE 'usr_theirs_%_' || $1`, [userId]);
});

/** The review of the last 30 days for `reviewer`, with the statements it ran (to EXPLAIN). */
async function reviewRecording(reviewer: string): Promise<{
  made: Awaited<ReturnType<typeof readMadeByAccount>>;
  statements: { sql: string; params: readonly unknown[] }[];
}> {
  const statements: { sql: string; params: readonly unknown[] }[] = [];
  const made = await readMadeByAccount(
    {
      query: ((sql: string, params: readonly unknown[]) => {
        statements.push({ sql, params });
        return db.query(sql, [...params]);
      }) as never,
    },
    reviewer,
    new Date(Date.now() - 30 * DAY_MS),
    200,
  );
  return { made, statements };
}

describe('the review on a large audit log', () => {
  it("reads the user's entries of the window only, in each organization they are in, and the objects they name", async () => {
    const { made, statements } = await reviewRecording(userId);
    expect(made.rows.map((row) => [row.kind, row.id, row.made_as]).sort()).toEqual(
      [
        ['api_key', keyId, 'created'],
        ['oauth_approval', `conn_mine_${userId}`, 'approved'],
        ['invitation', `inv_mine_${userId}`, 'invited'],
        ['oauth_client', `gw_client_mine_${userId}`, 'created'],
        ['webhook_endpoint', `wh_mine_${userId}`, 'created'],
        ['member', joinedId, 'joined'],
        ['member', raisedId, 'raised'],
      ].sort(),
    );
    let visited = 0;
    let objectsVisited = 0;
    let approvalsVisited = 0;
    let membersVisited = 0;
    for (const statement of statements) {
      const plan = await analyzedPlan(db, statement.sql, statement.params);
      visited += rowsVisited(plan, (table) => table === 'dashboard_audit_log');
      objectsVisited += rowsVisited(plan, (table) => OBJECT_TABLES.has(table));
      approvalsVisited += rowsVisited(plan, (table) => table === 'app_connections');
      membersVisited += rowsVisited(plan, (table) => MEMBER_TABLES.has(table));
    }
    // Two statements, two memberships (their own organization and this one): per membership
    // the window's first entry of the organization, and the user's six entries since. Not
    // the 20,000 old entries of theirs, nor the colleague's 20,000 (and 5,000 role changes) of
    // this month.
    expect(visited).toBeLessThanOrEqual(2 * (2 + 6));
    // The user's two invitations, OAuth client and webhook endpoint, each read by its id: not
    // the colleague's 5,000 of each, nor their 5,000 accepted invitations.
    // (and the client the user's approval went to: 5)
    expect(objectsVisited).toBeLessThanOrEqual(5);
    // The user's own memberships (two, in each statement), then the member who joined and the
    // one raised, each read by its key, with their e-mail, and the raised one's membership once
    // more for the changes made since it began (decision 493): not the organization's 5,000
    // members.
    expect(membersVisited).toBeLessThanOrEqual(2 * 2 + 2 * 2 + 1);
    // The user's one approval (read once, or once per membership when the planner loops over
    // them), and the connection of their key: not the colleague's 5,000 in the same organization.
    expect(approvalsVisited).toBeLessThanOrEqual(3);
  });
});

describe('the review where two it reached raise each other over and over (decision 531)', () => {
  /** Raises each of the two accomplices wrote of the other. */
  const TOGGLES = 15;

  it("reads each reached member's entries once, not once per path to them", async () => {
    const ring = await seed(env, ['--name', 'Accomplices']);
    const reviewer = (await createMember(env, uniqueEmail('made-ring'), ring.org_id, 'admin')).id;
    const first = (await createMember(env, uniqueEmail('ring-a'), ring.org_id, 'admin')).id;
    const second = (await createMember(env, uniqueEmail('ring-b'), ring.org_id, 'admin')).id;
    // the reviewer's account raised the first; the two then raised each other, again and again
    // (each lowering in between, as the route lets them)
    await db.query(
      `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id, details)
       VALUES ($1, $2, 'member.change_role', 'member', $3, '{"from":"viewer","to":"admin"}')`,
      [ring.org_id, reviewer, first],
    );
    await db.query(
      `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id, details)
       SELECT $1, CASE WHEN g % 2 = 0 THEN $2 ELSE $3 END, 'member.change_role', 'member',
              CASE WHEN g % 2 = 0 THEN $3 ELSE $2 END, '{"from":"member","to":"admin"}'
         FROM generate_series(1, $4::int) g`,
      [ring.org_id, first, second, 2 * TOGGLES],
    );
    const { made, statements } = await reviewRecording(reviewer);
    expect(
      made.rows
        .filter((row) => row.kind === 'member')
        .map((row) => [row.id, row.made_as, row.via_email === null ? 'own' : 'via'])
        .sort(),
    ).toEqual(
      [
        [first, 'raised', 'own'],
        [second, 'raised', 'via'],
      ].sort(),
    );
    let visited = 0;
    for (const statement of statements) {
      const plan = await analyzedPlan(db, statement.sql, statement.params);
      visited += rowsVisited(plan, (table) => table === 'dashboard_audit_log');
    }
    // each of the two's entries read a few times over (to reach, for what they did, for what
    // was done to them since), not once for every path of four steps through them (15^4)
    expect(visited).toBeLessThanOrEqual(20 * 2 * TOGGLES);
  });
});
