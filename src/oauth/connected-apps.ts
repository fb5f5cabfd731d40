// Connected apps: an organization's OAuth connections as its members see them — which app,
// who connected it, whether its token was issued, its token's request-rate limits, its
// monthly cap (changed as any connection's: PUT/DELETE /dashboard/api/connections/{id}/cap,
// src/admin/caps.ts; decision 415), and what it
// spent (this calendar month and in total, from the daily rollups the usage writer keeps) —
// and the members' revocation. The limits are changed as an API key's are
// (PATCH /dashboard/api/api-keys/{token_id}: src/admin/api-keys.ts).
import {
  CONNECTED_APP_COLUMNS,
  CONNECTED_APP_FROM,
  connectedAppObject,
  type ConnectedAppRow,
} from '../admin/connection-events.js';
import { revokeConnection } from '../admin/connections.js';
import type { Actor } from '../audit/audit.js';
import type { ApiKeyInvalidation } from '../auth/api-key-store.js';
import { readPage, type Page, type PageRequest } from '../db/pages.js';
import type { DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { formatNano, formatNumeric, SETTLEMENT_CURRENCY } from '../money.js';

export interface Spend {
  readonly costNano: bigint;
  readonly walletCostNano: bigint;
  readonly requests: number;
}

/** A connected app with its token's limits, and what it spent this calendar month (UTC) and in
 * total. */
export interface ConnectedAppWithSpend extends ConnectedAppRow, ConnectedAppToken {
  readonly spend: { readonly thisMonth: Spend; readonly total: Spend };
}

/**
 * The app's token (an `api_keys` row of kind `oauth_token`): its id and rate limits; and the
 * connection's own monthly cap (its app-connection cap rule's amount).
 */
interface ConnectedAppToken {
  /** Numeric text; null: no connection-wide cap. */
  readonly cap_amount: string | null;
  /** Null: no token was issued (a code never exchanged, before connections waited for it). */
  readonly token_id: string | null;
  readonly requests_per_minute: number | null;
  readonly product_user_requests_per_minute: number | null;
}

/**
 * The connected app's columns with its token's and its cap's (the view of the dashboard, not
 * the events').
 */
const SELECT_CONNECTED_APP = `SELECT ${CONNECTED_APP_COLUMNS}, t.id AS token_id,
  t.requests_per_minute, t.product_user_requests_per_minute, cap.amount::text AS cap_amount
  FROM ${CONNECTED_APP_FROM}
  LEFT JOIN cap_rules cap ON cap.scope = 'app_connection' AND cap.status = 'active'
    AND cap.app_connection_id = c.id
  LEFT JOIN LATERAL (SELECT k.id, k.requests_per_minute, k.product_user_requests_per_minute
    FROM api_keys k WHERE k.app_connection_id = c.id AND k.kind = 'oauth_token'
    ORDER BY k.created_at LIMIT 1) t ON true`;

export function connectedAppView(row: ConnectedAppWithSpend): Record<string, unknown> {
  const { spend } = row;
  const money = (value: Spend) => ({
    cost: formatNano(value.costNano),
    wallet_cost: formatNano(value.walletCostNano),
    requests: value.requests,
  });
  return {
    ...connectedAppObject(row),
    token_id: row.token_id,
    requests_per_minute: row.requests_per_minute,
    product_user_requests_per_minute: row.product_user_requests_per_minute,
    monthly_cap: formatNumeric(row.cap_amount),
    currency: SETTLEMENT_CURRENCY,
    spend: { this_month: money(spend.thisMonth), total: money(spend.total) },
  };
}

/** The organization's OAuth connections, oldest first, each with its spend. */
export async function listConnectedApps(
  db: DbPool,
  orgId: string,
  page: PageRequest,
): Promise<Page<ConnectedAppWithSpend>> {
  const { rows, nextCursor } = await readPage<ConnectedAppRow & ConnectedAppToken>(
    db,
    {
      select: SELECT_CONNECTED_APP,
      where: 'c.org_id = $1 AND c.oauth_client_id IS NOT NULL',
      params: [orgId],
      createdAtColumn: 'c.created_at',
      idColumn: 'c.id',
    },
    page,
  );
  const spend = await spendOf(
    db,
    orgId,
    rows.map((row) => row.id),
  );
  return { rows: rows.map((row) => ({ ...row, spend: spend(row.id) })), nextCursor };
}

/** One connected app (null: none, or not an OAuth connection). */
export async function connectedApp(
  db: DbPool,
  connectionId: string,
): Promise<ConnectedAppWithSpend | null> {
  const { rows } = await db.query<ConnectedAppRow & ConnectedAppToken>(
    `${SELECT_CONNECTED_APP} WHERE c.id = $1 AND c.oauth_client_id IS NOT NULL`,
    [connectionId],
  );
  const row = rows[0];
  if (!row) return null;
  const spend = await spendOf(db, row.org_id, [row.id]);
  return { ...row, spend: spend(row.id) };
}

/** The user revokes a connected app of one of their organizations (the caller checked). */
export async function revokeConnectedApp(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: Actor,
  connectionId: string,
): Promise<Record<string, unknown> | GwError> {
  const { rowCount } = await db.query(
    'SELECT 1 FROM app_connections WHERE id = $1 AND oauth_client_id IS NOT NULL',
    [connectionId],
  );
  if (rowCount === 0) return gwError('gw_not_found', 'no connected app with this id');
  await revokeConnection(db, apiKeys, actor, connectionId);
  return connectedAppView((await connectedApp(db, connectionId))!);
}

/**
 * What each connection spent this calendar month (UTC) and in total, from the daily rollups
 * the usage writer keeps (docs/decisions.md: dashboard usage reads rollups).
 */
export async function spendOf(
  db: DbPool,
  orgId: string,
  connectionIds: readonly string[],
): Promise<(connectionId: string) => { thisMonth: Spend; total: Spend }> {
  const none: Spend = { costNano: 0n, walletCostNano: 0n, requests: 0 };
  const found = new Map<string, { thisMonth: Spend; total: Spend }>();
  if (connectionIds.length > 0) {
    const { rows } = await db.query<{
      app_connection_id: string;
      month_cost: string;
      month_wallet: string;
      month_requests: string;
      total_cost: string;
      total_wallet: string;
      total_requests: string;
    }>(
      `WITH month AS (SELECT date_trunc('month', now() AT TIME ZONE 'UTC')::date AS start)
       SELECT app_connection_id,
              COALESCE(sum(sell_cost_nano) FILTER (WHERE day >= month.start), 0)::text AS month_cost,
              COALESCE(sum(wallet_cost_nano) FILTER (WHERE day >= month.start), 0)::text AS month_wallet,
              COALESCE(sum(requests) FILTER (WHERE day >= month.start), 0)::text AS month_requests,
              sum(sell_cost_nano)::text AS total_cost,
              sum(wallet_cost_nano)::text AS total_wallet,
              sum(requests)::text AS total_requests
         FROM usage_rollups_daily, month
        WHERE org_id = $1 AND app_connection_id = ANY($2::text[]) AND currency = $3
        GROUP BY app_connection_id`,
      [orgId, connectionIds, SETTLEMENT_CURRENCY],
    );
    for (const row of rows) {
      found.set(row.app_connection_id, {
        thisMonth: {
          costNano: BigInt(row.month_cost),
          walletCostNano: BigInt(row.month_wallet),
          requests: Number(row.month_requests),
        },
        total: {
          costNano: BigInt(row.total_cost),
          walletCostNano: BigInt(row.total_wallet),
          requests: Number(row.total_requests),
        },
      });
    }
  }
  return (connectionId) => found.get(connectionId) ?? { thisMonth: none, total: none };
}
