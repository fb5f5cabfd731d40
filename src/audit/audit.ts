// The audit log of changes made in the dashboard or with the CLI (actor `cli`): who did what to
// which object, when. Written in the same transaction as the change it describes, so the log and
// the data never disagree.
import type { DbPool } from '../db/pool.js';

/** Who made an audited change: a dashboard user (or the operator's CLI, which names none). */
export interface Actor {
  readonly userId: string;
}

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

/** Writes the entry; returns its id (a change done in steps updates its entry: decision 577). */
export async function recordAudit(db: Pick<DbPool, 'query'>, entry: AuditEntry): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id, details)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id::text`,
    [
      entry.orgId,
      entry.userId,
      entry.action,
      entry.objectType,
      entry.objectId,
      JSON.stringify(entry.details ?? {}),
    ],
  );
  return rows[0]!.id;
}

/**
 * Runs a change that returns the rows it touched (`RETURNING org_id, …`) and, when it
 * touched one, audits it in the same transaction. Changing nothing is not audited.
 */
export async function changeAudited<Row extends { org_id: string }>(
  client: Pick<DbPool, 'query'>,
  sql: string,
  params: readonly unknown[],
  entry: Omit<AuditEntry, 'orgId'>,
): Promise<Row | undefined> {
  const { rows } = await client.query<Row>(sql, [...params]);
  const changed = rows[0];
  if (changed) await recordAudit(client, { orgId: changed.org_id, ...entry });
  return changed;
}
