// Reading the audit log: an organization's, or what one user did in their organizations; newest
// first.
import { newestFirstPage } from '../db/pages.js';
import type { DbPool } from '../db/pool.js';

export interface AuditRow {
  readonly id: string;
  readonly user_id: string;
  readonly email: string | null;
  readonly action: string;
  readonly object_type: string;
  readonly object_id: string;
  readonly details: Record<string, unknown>;
  readonly created_at: Date;
}

export function auditView(row: AuditRow): Record<string, unknown> {
  return {
    id: row.id,
    user_id: row.user_id,
    email: row.email,
    action: row.action,
    object_type: row.object_type,
    object_id: row.object_id,
    details: row.details,
    created_at: row.created_at.toISOString(),
  };
}

/** One page, newest first; the cursor is the last entry's id (ids only grow). */
export async function readAuditLog(
  db: DbPool,
  orgId: string,
  limit: number,
  beforeId: string | null,
): Promise<{ rows: AuditRow[]; nextCursor: string | null }> {
  const { rows } = await db.query<AuditRow>(
    `SELECT a.id::text, a.user_id, u.email, a.action, a.object_type, a.object_id, a.details,
            a.created_at
       FROM dashboard_audit_log a LEFT JOIN dashboard_users u ON u.id = a.user_id
      WHERE a.org_id = $1 AND ($3::bigint IS NULL OR a.id < $3::bigint)
      ORDER BY a.id DESC LIMIT $2`,
    [orgId, limit + 1, beforeId],
  );
  return newestFirstPage(rows, limit);
}

/** An entry of a user's own activity: which organization it changed, beside the entry. */
export interface ActivityRow extends AuditRow {
  readonly org_id: string;
  readonly org_name: string;
}

export function activityView(row: ActivityRow): Record<string, unknown> {
  return { org_id: row.org_id, org_name: row.org_name, ...auditView(row) };
}

/**
 * One page of what `userId` did, newest first, in the organizations they are a member of now
 * (one they left or were removed from is no longer theirs to read). Each membership reads its
 * own newest entries (index `dashboard_audit_log_user_org`) and the pages merge: what the user
 * did in organizations they left, however much, is never read, and neither are other users'
 * entries, so a page costs at most its size per membership.
 */
export async function readUserActivity(
  db: Pick<DbPool, 'query'>,
  userId: string,
  limit: number,
  beforeId: string | null,
): Promise<{ rows: ActivityRow[]; nextCursor: string | null }> {
  const { rows } = await db.query<ActivityRow>(
    `SELECT a.id::text, a.user_id, u.email, a.action, a.object_type, a.object_id, a.details,
            a.created_at, a.org_id, o.name AS org_name
       FROM org_memberships m
       JOIN organizations o ON o.id = m.org_id
       CROSS JOIN LATERAL (
         SELECT * FROM dashboard_audit_log e
          WHERE e.user_id = m.user_id AND e.org_id = m.org_id
            AND ($3::bigint IS NULL OR e.id < $3::bigint)
          ORDER BY e.id DESC LIMIT $2
       ) a
       LEFT JOIN dashboard_users u ON u.id = a.user_id
      WHERE m.user_id = $1
      ORDER BY a.id DESC LIMIT $2`,
    [userId, limit + 1, beforeId],
  );
  return newestFirstPage(rows, limit);
}
