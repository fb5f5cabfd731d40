// What a dashboard account made recently that still works, in every organization it is a
// member of now (decisions 419, 421): the OAuth approvals it gave (connections it approved,
// which its organization pays for), the API keys and service keys it created or rotated in, the
// invitations it sent that are still pending, the OAuth clients it registered or whose secret
// it rotated (still active), the webhook endpoints it created or pointed to another
// address (not deleted; while they still send to the address the account set), and the
// members it let in: who joined through its invitation and is still a member, and whose role it
// raised while they still hold the role it gave (decision 477). After a
// password reset these are what whoever had the password may have left behind; a password reset
// ends sessions, not these. Nothing here revokes: the review's revoke buttons call each
// object's own revoke route, under that route's role rule.
//
// Where it is read from: an approval names its user (app_connections.connected_by_user_id); a
// key, an OAuth client or a webhook endpoint does not, so its maker is the audit entry written
// in its transaction (`api_key.create`, `api_key.rotate` naming the new key as `replaced_by`,
// `service_key.create`, `oauth_client.create`, `oauth_client.rotate_secret`,
// `webhook.create`, `webhook.update` with a `url`); an invitation names its sender
// (`invited_by`) and is found through `invitation.create` all the same, so that it is read by
// id, not by scanning the organization's invitations; a member, through that invitation (who
// accepted it) or the account's `member.change_role`, read by its membership's key. The
// entries are read per membership after the organization's last entry dated over an hour
// before `since` (index dashboard_audit_log_org), the user's own entries from there on (index
// dashboard_audit_log_user_org): a read costs what the user did in the window, never their
// whole history. An entry's id is drawn when it is written, its created_at is its
// transaction's start: an entry dated before `since` less an hour was written before `since`
// (no transaction lasts an hour), so before every entry of the window. Not the first entry
// dated in the window: a write that started earlier and waited (on a lock) is numbered after
// entries dated later, which that bound skipped (decision 461). What is listed is then
// filtered by the object's own created_at (an OAuth client's rotation, by its entry's).
import type { DbPool } from '../db/pool.js';
import { ROLES, type Role } from './users.js';

export const MADE_KINDS = [
  'oauth_approval',
  'api_key',
  'service_key',
  'invitation',
  'oauth_client',
  'webhook_endpoint',
  'member',
] as const;
export type MadeKind = (typeof MADE_KINDS)[number];

export interface MadeByAccountRow {
  readonly kind: MadeKind;
  readonly id: string;
  readonly org_id: string;
  readonly org_name: string;
  /** The account's role in that organization now. */
  readonly role: Role;
  readonly created_at: Date;
  /**
   * 'rotated': an API key made by rotating another, or an OAuth client whose secret the
   * account rotated (and did not register); 'invited': an invitation; 'redirected': a webhook
   * endpoint someone else made whose address the account changed, still sending there;
   * 'joined': a member who joined through the account's invitation; 'raised': a member whose
   * role the account raised, who still holds it.
   */
  readonly made_as:
    'created' | 'rotated' | 'approved' | 'invited' | 'redirected' | 'joined' | 'raised';
  readonly app_id: string | null;
  readonly app_name: string | null;
  /** An approval's app's own organization (who made the app), else null. */
  readonly app_org_name: string | null;
  /**
   * The key's name, the connection's, the OAuth client's, the invited e-mail, the webhook
   * endpoint's description (null when empty), or the member's e-mail.
   */
  readonly name: string | null;
  /** A key's hint, or an OAuth client's secret hint (null: a public client). */
  readonly key_hint: string | null;
  /** The OAuth client the approval was given to. */
  readonly client_name: string | null;
  /** The role an invitation offers. */
  readonly invited_role: Role | null;
  /** A webhook endpoint's URL. */
  readonly url: string | null;
  /** The role the account gave a member: their invitation's, or the one it raised them to. */
  readonly given_role: Role | null;
  /** A member's role now. */
  readonly member_role: Role | null;
  /**
   * A member let in or raised by a member the account let in or raised (or further on): the
   * e-mail of the one who did it (decision 531); null for what the account did itself.
   */
  readonly via_email: string | null;
}

export interface MadeByAccount {
  readonly rows: readonly MadeByAccountRow[];
  /** More than `limit` were found: the newest `limit` are in `rows`. */
  readonly truncated: boolean;
  /** The account's latest password reset by e-mail link in the window, or null. */
  readonly passwordResetAt: Date | null;
}

/**
 * The memberships and, per membership, the user's audit entries the review reads. `reach` is
 * materialized and the per-membership read fenced (OFFSET 0) so the planner runs one index
 * range scan per membership from its bound: flattened, it estimated the bound's selectivity
 * badly and scanned every entry of the user (test/made-recently.scale.test.ts).
 */
const ENTRIES = `
  WITH RECURSIVE reach AS MATERIALIZED (
    SELECT m.org_id, o.name AS org_name, m.role,
           (SELECT e.id FROM dashboard_audit_log e
             WHERE e.org_id = m.org_id AND e.created_at < $2::timestamptz - interval '1 hour'
             ORDER BY e.created_at DESC, e.id DESC LIMIT 1) AS entry_before_id
      FROM org_memberships m JOIN organizations o ON o.id = m.org_id
     WHERE m.user_id = $1
  ), entries AS (
    SELECT e.org_id, e.id AS entry_id, e.action, e.object_id, e.details, e.created_at
      FROM reach r
      CROSS JOIN LATERAL (
        SELECT * FROM dashboard_audit_log l
         WHERE l.user_id = $1 AND l.org_id = r.org_id AND l.id > COALESCE(r.entry_before_id, 0)
           AND l.action IN ('api_key.create', 'api_key.rotate', 'service_key.create',
                            'invitation.create', 'oauth_client.create',
                            'oauth_client.rotate_secret', 'webhook.create', 'webhook.update',
                            'member.change_role', 'user.password_reset')
        OFFSET 0
      ) e
  )`;

/**
 * What the reached member `t` (in `t.org_id`; `r`: that organization's `reach` row) did in the
 * window that reaches others: each raise they made, and each invitation of theirs accepted.
 * Columns: org_id, user_id (the member reached), made_as, given, at, entry_id.
 */
const REACHED_MEMBERS_FACTS = `
  SELECT l.org_id, l.object_id AS user_id, 'raised' AS made_as,
         l.details->>'to' AS given, l.created_at AS at, l.id AS entry_id
    FROM dashboard_audit_log l
   WHERE l.user_id = t.user_id AND l.org_id = t.org_id
     AND l.id > COALESCE(r.entry_before_id, 0) AND l.created_at >= $2
     AND l.action = 'member.change_role'
     AND array_position($4::text[], l.details->>'to')
         < array_position($4::text[], l.details->>'from')
  UNION ALL
  SELECT i.org_id, i.responded_by, 'joined', i.role, i.responded_at, NULL::bigint
    FROM dashboard_audit_log l
    JOIN org_invitations i
      ON i.id = l.object_id AND i.org_id = l.org_id AND i.invited_by = t.user_id
   WHERE l.user_id = t.user_id AND l.org_id = t.org_id
     AND l.id > COALESCE(r.entry_before_id, 0) AND l.action = 'invitation.create'
     AND i.status = 'accepted' AND i.responded_at >= $2 AND i.responded_by IS NOT NULL`;

/**
 * The members the account let in or raised in the window, and those let in or raised by them,
 * and so on (decision 531): `members`, one row per fact (`via_user_id`: the member through whom,
 * null for the account's own). The account's own facts are its invitations accepted in the
 * window and its role changes read by 493's rule; a reached member's are each of their
 * invitations accepted and each raise they made there in the window, read by their entries
 * (index dashboard_audit_log_user_org). `reached` is a set: each member is read once however
 * many paths lead to them (two accomplices raising each other over and over made a walk of
 * every path take minutes: test/made-recently.scale.test.ts).
 */
const MEMBERS = `
  , direct AS (
    -- who accepted the account's invitation (the membership that acceptance made:
    -- its row and the answer share their transaction's now())
    SELECT e.org_id, i.responded_by AS user_id, 'joined' AS made_as, i.role AS given,
           i.responded_at AS at, NULL::bigint AS entry_id
      FROM entries e
      JOIN org_invitations i
        ON i.id = e.object_id AND i.org_id = e.org_id AND i.invited_by = $1
     WHERE e.action = 'invitation.create' AND i.status = 'accepted'
       AND i.responded_at >= $2
    UNION ALL
    -- the account's latest change of a member's role in the window, when it raised it,
    -- or when the role it gave is above the one the account's first change of the
    -- membership there is now found (raised, then lowered part of the way back or
    -- "changed" to the same role, is still raised: 493) ($4: the roles, highest first)
    SELECT org_id, user_id, 'raised', given, at, entry_id FROM (
      SELECT DISTINCT ON (e.org_id, e.object_id) e.org_id, e.object_id AS user_id,
             e.details->>'from' AS from_role,
             first_value(e.details->>'from')
               OVER (PARTITION BY e.org_id, e.object_id ORDER BY e.entry_id)
               AS first_from_role,
             e.details->>'to' AS given, e.created_at AS at, e.entry_id
        FROM entries e
        JOIN org_memberships now_member
          ON now_member.org_id = e.org_id AND now_member.user_id = e.object_id
       WHERE e.action = 'member.change_role' AND e.created_at >= $2
         AND e.created_at >= now_member.created_at
       ORDER BY e.org_id, e.object_id, e.entry_id DESC
    ) latest
     WHERE array_position($4::text[], given) < array_position($4::text[], from_role)
        OR array_position($4::text[], given) < array_position($4::text[], first_from_role)
  ), reached(org_id, user_id) AS (
    -- who the account let in or raised, then who they let in or raised, and so on: a set
    -- (UNION), so each member is read once however many paths lead to them
    SELECT org_id, user_id FROM direct
    UNION
    SELECT next.org_id, next.user_id
      FROM reached t
      JOIN reach r ON r.org_id = t.org_id
      CROSS JOIN LATERAL (${REACHED_MEMBERS_FACTS}) next
     WHERE next.user_id <> $1
  ), members AS (
    -- one row per fact (via_user_id: null for the account's own), the newest of each kind per
    -- member and by whom: a member raised over and over is judged by the latest raise
    SELECT org_id, user_id, made_as, given, at, entry_id, NULL::text AS via_user_id FROM direct
    UNION ALL
    SELECT * FROM (
      SELECT DISTINCT ON (fact.org_id, fact.user_id, fact.made_as, t.user_id)
             fact.org_id, fact.user_id, fact.made_as, fact.given, fact.at, fact.entry_id, t.user_id
        FROM reached t
        JOIN reach r ON r.org_id = t.org_id
        CROSS JOIN LATERAL (${REACHED_MEMBERS_FACTS}) fact
       WHERE fact.user_id <> $1
       ORDER BY fact.org_id, fact.user_id, fact.made_as, t.user_id, fact.at DESC
    ) latest_facts
  )`;

/**
 * What `userId` made since `since` that still works (a key not revoked, expired or past a
 * rotation's grace period, on an active connection; an approval whose connection is active; an
 * invitation pending and not expired; an OAuth client not deleted; a webhook endpoint not
 * deleted, enabled or not; a member still in the organization), newest first, at most `limit`.
 * An OAuth client both registered and rotated by the account is listed once, as registered; one
 * only rotated, at its latest rotation. A member who both joined through the account's
 * invitation and had their role raised by it is listed once, by the newer of the two that still
 * holds; the account itself never.
 */
export async function readMadeByAccount(
  db: Pick<DbPool, 'query'>,
  userId: string,
  since: Date,
  limit: number,
): Promise<MadeByAccount> {
  const [items, resets] = await Promise.all([
    db.query<MadeByAccountRow>(
      `${ENTRIES}${MEMBERS}
       SELECT 'api_key' AS kind, k.id, r.org_id, r.org_name, r.role, k.created_at,
              CASE e.action WHEN 'api_key.rotate' THEN 'rotated' ELSE 'created' END AS made_as,
              k.app_id, a.name AS app_name, NULL AS app_org_name, k.name, k.key_hint,
              NULL AS client_name, NULL AS invited_role, NULL AS url,
              NULL AS given_role, NULL AS member_role, NULL AS via_email
         FROM entries e
         JOIN reach r ON r.org_id = e.org_id
         JOIN api_keys k
           ON k.id = CASE e.action WHEN 'api_key.rotate' THEN e.details->>'replaced_by'
                                   ELSE e.object_id END
          AND k.org_id = e.org_id
         JOIN app_connections c ON c.id = k.app_connection_id
         JOIN apps a ON a.id = k.app_id
        WHERE e.action IN ('api_key.create', 'api_key.rotate') AND k.kind = 'api_key'
          AND k.status = 'active' AND (k.expires_at IS NULL OR k.expires_at > now())
          AND c.status = 'active' AND k.created_at >= $2
       UNION ALL
       SELECT 'service_key', s.id, r.org_id, r.org_name, r.role, s.created_at, 'created',
              NULL, NULL, NULL, NULL, s.key_hint, NULL, NULL, NULL, NULL, NULL, NULL
         FROM entries e
         JOIN reach r ON r.org_id = e.org_id
         JOIN service_keys s ON s.id = e.object_id AND s.org_id = e.org_id
        WHERE e.action = 'service_key.create' AND s.status = 'active'
          AND (s.expires_at IS NULL OR s.expires_at > now()) AND s.created_at >= $2
       UNION ALL
       SELECT 'oauth_approval', c.id, r.org_id, r.org_name, r.role, c.created_at, 'approved',
              c.app_id, a.name, ao.name, c.name, NULL, oc.name, NULL, NULL, NULL, NULL, NULL
         FROM reach r
         JOIN app_connections c
           ON c.org_id = r.org_id AND c.oauth_client_id IS NOT NULL
          AND c.connected_by_user_id = $1 AND c.status = 'active' AND c.created_at >= $2
         JOIN apps a ON a.id = c.app_id
         JOIN organizations ao ON ao.id = a.org_id
         LEFT JOIN oauth_clients oc ON oc.id = c.oauth_client_id
       UNION ALL
       SELECT 'invitation', i.id, r.org_id, r.org_name, r.role, i.created_at, 'invited',
              NULL, NULL, NULL, i.email, NULL, NULL, i.role, NULL, NULL, NULL, NULL
         FROM entries e
         JOIN reach r ON r.org_id = e.org_id
         JOIN org_invitations i
           ON i.id = e.object_id AND i.org_id = e.org_id AND i.invited_by = $1
        WHERE e.action = 'invitation.create' AND i.status = 'pending'
          AND i.expires_at > now() AND i.created_at >= $2
       UNION ALL
       SELECT * FROM (
         SELECT DISTINCT ON (o.id) 'oauth_client', o.id, r.org_id, r.org_name, r.role,
                CASE e.action WHEN 'oauth_client.create' THEN o.created_at ELSE e.created_at END,
                CASE e.action WHEN 'oauth_client.create' THEN 'created' ELSE 'rotated' END,
                o.app_id, a.name, NULL, o.name, o.client_secret_hint, NULL, NULL, NULL, NULL,
                NULL, NULL
           FROM entries e
           JOIN reach r ON r.org_id = e.org_id
           JOIN oauth_clients o
             ON o.id = e.object_id AND o.org_id = e.org_id AND o.status = 'active'
           JOIN apps a ON a.id = o.app_id
          WHERE (e.action = 'oauth_client.create' AND o.created_at >= $2)
             OR (e.action = 'oauth_client.rotate_secret' AND e.created_at >= $2)
          ORDER BY o.id, e.action = 'oauth_client.create' DESC, e.created_at DESC
       ) registered_or_rotated
       UNION ALL
       SELECT kind, id, org_id, org_name, role, created_at, made_as, NULL, NULL, NULL, name,
              NULL, NULL, NULL, url, NULL, NULL, NULL
         FROM (
           SELECT DISTINCT ON (w.id) 'webhook_endpoint' AS kind, w.id, r.org_id, r.org_name,
                  r.role,
                  CASE e.action WHEN 'webhook.create' THEN w.created_at ELSE e.created_at END
                    AS created_at,
                  CASE e.action WHEN 'webhook.create' THEN 'created' ELSE 'redirected' END
                    AS made_as,
                  NULLIF(w.description, '') AS name, w.url, e.details->>'url' AS set_url
             FROM entries e
             JOIN reach r ON r.org_id = e.org_id
             JOIN webhook_endpoints w ON w.id = e.object_id AND w.org_id = e.org_id
            WHERE (e.action = 'webhook.create' AND w.created_at >= $2)
               OR (e.action = 'webhook.update' AND e.details ? 'url' AND e.created_at >= $2)
            -- the change applied last: edits of one endpoint wait on its row and write their
            -- entries holding it, so they are numbered in that order (not dated: 462)
            ORDER BY w.id, e.action = 'webhook.create' DESC, e.entry_id DESC
         ) created_or_redirected
        -- one the account pointed elsewhere, while it still sends where the account set it
        WHERE made_as = 'created' OR url = set_url
       UNION ALL
       SELECT * FROM (
         SELECT DISTINCT ON (r.org_id, m.user_id) 'member', m.user_id, r.org_id, r.org_name,
                r.role, t.at, t.made_as, NULL, NULL, NULL, u.email, NULL, NULL, NULL, NULL,
                t.given, m.role, via.email
           FROM members t
           JOIN reach r ON r.org_id = t.org_id
           JOIN org_memberships m ON m.org_id = t.org_id AND m.user_id = t.user_id
           JOIN dashboard_users u ON u.id = m.user_id
           LEFT JOIN dashboard_users via ON via.id = t.via_user_id
          WHERE m.user_id <> $1
            AND CASE t.made_as WHEN 'joined' THEN m.created_at = t.at
                 -- the membership raised, in the role given, changed since by nobody outside
                 -- the account's reach there (a colleague's change makes it theirs: 477, 512;
                 -- two the account raised cannot take each other off its list: 529)
                 ELSE m.role = t.given AND m.created_at <= t.at AND NOT EXISTS (
                   -- by entry id, not date: a change that waited on the membership's lock
                   -- is dated before the one it follows (461); migration 071's index
                   SELECT 1 FROM dashboard_audit_log l
                    WHERE l.action = 'member.change_role' AND l.org_id = t.org_id
                      AND l.object_id = t.user_id AND l.id > t.entry_id AND l.user_id <> $1
                      AND l.user_id NOT IN (
                        SELECT reached.user_id FROM reached WHERE reached.org_id = t.org_id)) END
          -- the account's own before those it reached through others, then the newest
          ORDER BY r.org_id, m.user_id, t.via_user_id IS NOT NULL, t.at DESC
       ) joined_or_raised
        ORDER BY created_at DESC, id DESC
        LIMIT $3`,
      [userId, since, limit + 1, ROLES],
    ),
    db.query<{ reset_at: Date | null }>(
      `${ENTRIES}
       SELECT max(created_at) AS reset_at FROM entries
        WHERE action = 'user.password_reset' AND created_at >= $2`,
      [userId, since],
    ),
  ]);
  return {
    rows: items.rows.slice(0, limit),
    truncated: items.rows.length > limit,
    passwordResetAt: resets.rows[0]?.reset_at ?? null,
  };
}
