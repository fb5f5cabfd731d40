// What a provider credential looks like to the dashboard, the CLI and webhook events (its
// fingerprint, never the secret), and the read of several by id. Apart from the credential
// store so that what reads views (the usage writer's thread, for events) loads neither the
// vendor validation's HTTP client nor the pages' schemas.
import type { Vendor } from '../catalog/models.js';
import type { DbPool } from '../db/pool.js';

export const ROUTING_MODES = ['byok_first', 'byok_only'] as const;
export type RoutingMode = (typeof ROUTING_MODES)[number];

export interface CredentialView {
  id: string;
  org_id: string;
  provider: Vendor;
  secret_kind: 'api_key';
  name: string;
  model_policy: string[];
  routing_mode: RoutingMode;
  priority: number;
  status: string;
  fingerprint: string;
  app_connection_ids: string[];
  created_at: string;
}

export const VIEW_COLUMNS = `c.id, c.org_id, c.provider, c.secret_kind, c.name, c.model_policy, c.routing_mode,
  c.priority, c.status, c.fingerprint, c.created_at,
  COALESCE(array_agg(g.app_connection_id ORDER BY g.app_connection_id)
           FILTER (WHERE g.app_connection_id IS NOT NULL), '{}') AS app_connection_ids`;

export interface ViewRow extends Omit<CredentialView, 'created_at'> {
  created_at: Date;
  cursor_us?: string;
}

export const toView = ({ cursor_us: _cursor, ...row }: ViewRow): CredentialView => ({
  ...row,
  created_at: row.created_at.toISOString(),
});

/** The views of these credentials (any status), by id: what webhook events about them carry. */
export async function credentialViews(
  db: Pick<DbPool, 'query'>,
  ids: readonly string[],
): Promise<Map<string, CredentialView>> {
  const { rows } = await db.query<ViewRow>(
    `SELECT ${VIEW_COLUMNS} FROM provider_credentials c
       LEFT JOIN provider_credential_grants g ON g.credential_id = c.id
      WHERE c.id = ANY($1::text[]) GROUP BY c.id`,
    [ids],
  );
  return new Map(rows.map((row) => [row.id, toView(row)]));
}
