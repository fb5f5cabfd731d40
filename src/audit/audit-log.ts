// Reading the audit log of an organization, newest first.
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
