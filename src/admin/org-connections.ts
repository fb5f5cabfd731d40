// The organization's connections across its apps, for the dashboard's pickers and labels
// (decision 300): in pages, found by the start of their name or their app's, or by id; and
// counted for the overview. Only connections of the organization's own apps that are not
// deleted, as the apps list and each app's connections show them (a connection another
// organization made by OAuth consent is that organization's connected app).
import { likePrefix, readPage, type Page, type PageRequest } from '../db/pages.js';
import type { DbPool } from '../db/pool.js';
import { connectionView, type ConnectionRow } from './connections.js';

export interface OrgConnectionRow extends ConnectionRow {
  readonly app_name: string;
}

export interface OrgConnectionFilter {
  /** The start of the connection's name or of its app's (any case). */
  readonly q?: string | undefined;
  readonly status?: ConnectionRow['status'] | undefined;
  /** Only these connections (the others, and ids of no connection here, are left out). */
  readonly ids?: readonly string[] | undefined;
}

export interface OrgCounts {
  /** Apps that are not deleted. */
  readonly apps: number;
  /** Their connections, active and revoked. */
  readonly active_connections: number;
  readonly revoked_connections: number;
}

const COLUMNS = `c.id, c.org_id, c.app_id, a.name AS app_name, c.name, c.status,
  c.requires_product_user, c.credit_mode, c.overrun_policy, c.oauth_client_id, c.created_at,
  c.updated_at, (extract(epoch FROM c.created_at) * 1000000)::bigint::text AS cursor_us`;
const FROM = `app_connections c JOIN apps a ON a.id = c.app_id`;
const OWN = `c.org_id = $1 AND a.org_id = $1 AND a.status = 'active'`;

/** The organization's connections, oldest first, narrowed by the filter. */
export function listOrgConnections(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  filter: OrgConnectionFilter,
  page: PageRequest,
): Promise<Page<OrgConnectionRow>> {
  const params: unknown[] = [orgId];
  const where = [OWN];
  if (filter.q) {
    params.push(likePrefix(filter.q));
    const pattern = `lower($${params.length})`;
    where.push(`(lower(c.name) LIKE ${pattern} OR lower(a.name) LIKE ${pattern})`);
  }
  if (filter.status) {
    params.push(filter.status);
    where.push(`c.status = $${params.length}`);
  }
  if (filter.ids) {
    params.push(filter.ids);
    where.push(`c.id = ANY($${params.length}::text[])`);
  }
  return readPage(
    db,
    {
      select: `SELECT ${COLUMNS} FROM ${FROM}`,
      where: where.join(' AND '),
      params,
      createdAtColumn: 'c.created_at',
      idColumn: 'c.id',
    },
    page,
  );
}

export function orgConnectionView(row: OrgConnectionRow): Record<string, unknown> {
  return { ...connectionView(row), app_name: row.app_name };
}

/** How many apps and connections the organization has (the overview's figures). */
export async function orgCounts(db: Pick<DbPool, 'query'>, orgId: string): Promise<OrgCounts> {
  const { rows } = await db.query<{ apps: string; active: string; revoked: string }>(
    `SELECT (SELECT count(*) FROM apps WHERE org_id = $1 AND status = 'active')::text AS apps,
            count(*) FILTER (WHERE c.status = 'active')::text AS active,
            count(*) FILTER (WHERE c.status = 'revoked')::text AS revoked
       FROM ${FROM} WHERE ${OWN}`,
    [orgId],
  );
  const row = rows[0]!;
  return {
    apps: Number(row.apps),
    active_connections: Number(row.active),
    revoked_connections: Number(row.revoked),
  };
}
