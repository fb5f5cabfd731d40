// The audit log of dashboard writes: who did what to which object, when. Written in the same
// transaction as the change it describes, so the log and the data never disagree.
import type { DbPool } from '../db/pool.js';

export interface AuditEntry {
  readonly orgId: string;
  readonly userId: string;
  /** `<object type>.<verb>`, e.g. `app.create`. */
  readonly action: string;
  readonly objectType: string;
  readonly objectId: string;
  /** What changed; never a secret (raw keys, passwords, provider secrets). */
  readonly details?: Readonly<Record<string, unknown>>;
}

export async function recordAudit(db: Pick<DbPool, 'query'>, entry: AuditEntry): Promise<void> {
  await db.query(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id, details)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      entry.orgId,
      entry.userId,
      entry.action,
      entry.objectType,
      entry.objectId,
      JSON.stringify(entry.details ?? {}),
    ],
  );
}
