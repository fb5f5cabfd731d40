// Apps of an organization: the service the CLI and the dashboard API share.
import { recordAudit } from '../audit/audit.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { CURSOR_COLUMN, readPage, type Page, type PageRequest } from '../db/pages.js';
import { createApp } from './provisioning.js';

export interface AppRow {
  readonly id: string;
  readonly org_id: string;
  readonly name: string;
  readonly created_at: Date;
  readonly cursor_us: string;
}

export interface Actor {
  readonly userId: string;
}

export function appView(row: AppRow): Record<string, unknown> {
  return {
    id: row.id,
    org_id: row.org_id,
    name: row.name,
    created_at: row.created_at.toISOString(),
  };
}

export function listApps(db: DbPool, orgId: string, page: PageRequest): Promise<Page<AppRow>> {
  const select = `SELECT id, org_id, name, created_at, ${CURSOR_COLUMN} FROM apps`;
  return readPage(db, { select, where: 'org_id = $1', params: [orgId] }, page);
}

/** Creates an app, recording who did it in the audit log (same transaction). */
export async function createAppAs(
  db: DbPool,
  actor: Actor,
  orgId: string,
  name: string,
): Promise<AppRow> {
  return withTransaction(db, async (client) => {
    const id = await createApp(client, orgId, name);
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'app.create',
      objectType: 'app',
      objectId: id,
      details: { name },
    });
    const { rows } = await client.query<AppRow>(
      `SELECT id, org_id, name, created_at, ${CURSOR_COLUMN} FROM apps WHERE id = $1`,
      [id],
    );
    return rows[0]!;
  });
}
