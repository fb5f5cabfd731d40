// The one place where the events of OAuth connections happen: `oauth_connection.created` when
// a user approves an app (src/oauth/connections.ts) and `oauth_connection.revoked` whenever
// one stops, whoever stops it (src/admin/connections.ts: the app through POST /oauth/revoke,
// the user in the dashboard, a replayed authorization code, a deleted OAuth client).
//
// It is called inside the transaction that makes the change, so an event can never be
// recorded for a change that rolled back, nor a change be committed without its event: it
// writes the webhook outbox (src/webhooks/outbox.ts) with `tx`. The event's `data` is the
// connected app as the paying organization's members see it
// (GET /dashboard/api/orgs/{org_id}/connected-apps), without its spend (read from the usage
// rollups; an event is the fact of one moment).
import type { DbPool } from '../db/pool.js';
import { emitEvent } from '../webhooks/outbox.js';

export interface OAuthConnectionEvent {
  readonly type: 'oauth_connection.created' | 'oauth_connection.revoked';
  /** The paying organization, which owns the connection. */
  readonly orgId: string;
  readonly appConnectionId: string;
  readonly appId: string;
  readonly oauthClientId: string;
  readonly occurredAt: Date;
}

/** A connected app as the paying organization sees it (its spend is added by its readers). */
export interface ConnectedAppRow {
  readonly id: string;
  readonly org_id: string;
  readonly app_id: string;
  readonly app_name: string;
  readonly oauth_client_id: string;
  readonly client_name: string | null;
  readonly status: 'active' | 'revoked';
  readonly connected_by_email: string | null;
  readonly token_issued_at: Date | null;
  readonly created_at: Date;
  readonly revoked_at: Date | null;
  readonly cursor_us: string;
}

export const CONNECTED_APP_COLUMNS = `c.id, c.org_id, c.app_id, a.name AS app_name, c.oauth_client_id,
  oc.name AS client_name, c.status, u.email AS connected_by_email,
  (SELECT min(k.created_at) FROM api_keys k
    WHERE k.app_connection_id = c.id AND k.kind = 'oauth_token') AS token_issued_at,
  c.created_at, c.revoked_at,
  (extract(epoch FROM c.created_at) * 1000000)::bigint::text AS cursor_us`;
export const CONNECTED_APP_FROM = `app_connections c
  JOIN apps a ON a.id = c.app_id
  LEFT JOIN oauth_clients oc ON oc.id = c.oauth_client_id
  LEFT JOIN dashboard_users u ON u.id = c.connected_by_user_id`;

/** The connected app's fields of the dashboard's view (src/oauth/connected-apps.ts). */
export function connectedAppObject(row: ConnectedAppRow): Record<string, unknown> {
  return {
    id: row.id,
    org_id: row.org_id,
    app_id: row.app_id,
    app_name: row.app_name,
    oauth_client_id: row.oauth_client_id,
    client_name: row.client_name,
    status: row.status,
    connected_by: row.connected_by_email,
    token_issued_at: row.token_issued_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

/** Records an OAuth connection's event in the transaction `tx` that changes the connection. */
export async function recordOAuthConnectionEvent(
  tx: Pick<DbPool, 'query'>,
  event: OAuthConnectionEvent,
): Promise<void> {
  const { rows } = await tx.query<ConnectedAppRow>(
    `SELECT ${CONNECTED_APP_COLUMNS} FROM ${CONNECTED_APP_FROM} WHERE c.id = $1`,
    [event.appConnectionId],
  );
  const row = rows[0];
  if (!row) return;
  await emitEvent(tx, event.orgId, event.type, connectedAppObject(row), {
    occurredAt: event.occurredAt,
  });
}
