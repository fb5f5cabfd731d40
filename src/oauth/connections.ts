// OAuth connections: what a user's approval makes (an app connection of the app in the
// organization the user chose to pay, and a single-use code), what the code is exchanged
// for (the connection's `gw_oauth_…` token, an API-key record of that connection), and how
// it ends (RFC 7009 revocation by the app, the user's revocation in the dashboard, a replayed
// code). Revocation itself is src/admin/connections.ts's revokeConnection, the one rule for
// every connection.
import { revokeConnection } from '../admin/connections.js';
import { recordOAuthConnectionEvent } from '../admin/connection-events.js';
import type { Actor } from '../admin/apps.js';
import { createAppConnection, createOAuthToken } from '../admin/provisioning.js';
import type { Membership } from '../accounts/users.js';
import { roleAtLeast } from '../accounts/users.js';
import { recordAudit } from '../audit/audit.js';
import type { ApiKeyStore } from '../auth/api-key-store.js';
import { readPage, type Page, type PageRequest } from '../db/pages.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { sha256Hex } from '../ids.js';
import { formatNano, SETTLEMENT_CURRENCY } from '../money.js';
import type { AuthorizationCodes } from './codes.js';
import type { AuthorizingClient, OAuthClientIdentity } from './clients.js';
import { verifierMatches } from './pkce.js';

type ApiKeyInvalidation = Pick<ApiKeyStore, 'invalidate'>;

/** The least role in an organization that may have it pay for an app (use it). */
export const SPENDING_ROLE = 'member';

/** The organizations a user may choose to pay for an app: those where they may spend. */
export function payingOrgsOf(memberships: readonly Membership[]): Membership[] {
  return memberships.filter((membership) => roleAtLeast(membership.role, SPENDING_ROLE));
}

export interface Approval {
  readonly client: AuthorizingClient;
  readonly redirectUri: string;
  readonly codeChallenge: string;
  readonly userId: string;
  /** The paying organization; the caller checked the user may spend there. */
  readonly orgId: string;
}

/**
 * A user approved an app: its connection in the paying organization (active at once) and a
 * code bound to everything the exchange must present again.
 */
export async function approve(
  db: DbPool,
  codes: AuthorizationCodes,
  approval: Approval,
): Promise<{ code: string; connectionId: string }> {
  const { client } = approval;
  const connectionId = await withTransaction(db, async (tx) => {
    const id = await createAppConnection(tx, approval.orgId, client.appId, client.appName);
    await tx.query(
      'UPDATE app_connections SET oauth_client_id = $2, connected_by_user_id = $3 WHERE id = $1',
      [id, client.clientId, approval.userId],
    );
    await recordAudit(tx, {
      orgId: approval.orgId,
      userId: approval.userId,
      action: 'oauth_connection.create',
      objectType: 'app_connection',
      objectId: id,
      details: { app_id: client.appId, oauth_client_id: client.clientId },
    });
    await recordOAuthConnectionEvent(tx, {
      type: 'oauth_connection.created',
      orgId: approval.orgId,
      appConnectionId: id,
      appId: client.appId,
      oauthClientId: client.clientId,
      occurredAt: new Date(),
    });
    return id;
  });
  const code = await codes.issue({
    clientId: client.clientId,
    redirectUri: approval.redirectUri,
    codeChallenge: approval.codeChallenge,
    userId: approval.userId,
    orgId: approval.orgId,
    connectionId,
  });
  return { code, connectionId };
}

export interface Exchange {
  readonly code: string;
  readonly redirectUri: string;
  readonly codeVerifier: string;
}

/**
 * The token exchange (RFC 6749 section 4.1.3, RFC 7636 section 4.6). A code is one attempt:
 * once presented it is gone, whatever the outcome, and the connection of a code that did not
 * yield a token is revoked. A code presented again revokes the connection (and the token) its
 * first exchange made (RFC 6749 section 4.1.2).
 */
export async function exchange(
  db: DbPool,
  codes: AuthorizationCodes,
  apiKeys: ApiKeyInvalidation,
  client: OAuthClientIdentity,
  request: Exchange,
): Promise<{ accessToken: string; connectionId: string } | GwError> {
  const taken = await codes.take(request.code);
  const actor: Actor = { userId: client.clientId };
  if (taken.kind === 'unknown') {
    return gwError('gw_oauth_invalid_grant', 'the authorization code is unknown or expired');
  }
  if (taken.kind === 'used') {
    await revokeConnection(db, apiKeys, actor, taken.connectionId);
    return gwError(
      'gw_oauth_invalid_grant',
      'the authorization code was already used; the token issued from it is revoked',
    );
  }
  const { grant } = taken;
  const refusal =
    grant.clientId !== client.clientId
      ? gwError('gw_oauth_invalid_grant', 'the authorization code was issued to another client')
      : grant.redirectUri !== request.redirectUri
        ? gwError(
            'gw_redirect_uri_mismatch',
            'redirect_uri differs from the one of the authorization request',
          )
        : !verifierMatches(request.codeVerifier, grant.codeChallenge)
          ? gwError(
              'gw_oauth_invalid_grant',
              "code_verifier does not match the authorization request's code_challenge",
            )
          : undefined;
  if (refusal) {
    await revokeConnection(db, apiKeys, actor, grant.connectionId);
    return refusal;
  }
  const issued = await withTransaction(db, async (tx) => {
    const { rows } = await tx.query<{ org_id: string; app_id: string; status: string }>(
      'SELECT org_id, app_id, status FROM app_connections WHERE id = $1 FOR UPDATE',
      [grant.connectionId],
    );
    const connection = rows[0];
    if (!connection || connection.status !== 'active') return undefined;
    const token = await createOAuthToken(tx, {
      orgId: connection.org_id,
      appId: connection.app_id,
      appConnectionId: grant.connectionId,
    });
    await recordAudit(tx, {
      orgId: connection.org_id,
      userId: client.clientId,
      action: 'oauth_token.issue',
      objectType: 'api_key',
      objectId: token.id,
      details: { app_connection_id: grant.connectionId },
    });
    return token;
  });
  if (!issued) {
    return gwError(
      'gw_oauth_invalid_grant',
      'the connection this code was for has been revoked: ask the user to connect again',
    );
  }
  return { accessToken: issued.rawToken, connectionId: grant.connectionId };
}

/**
 * RFC 7009 revocation of a token by the client it was issued to: true when an active
 * connection was revoked; false when it already was, or when the token is unknown, not an
 * OAuth token, or another client's (RFC 7009 section 2.2: a client learns nothing of tokens
 * that are not its own).
 */
export async function revokeByToken(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  client: OAuthClientIdentity,
  token: string,
): Promise<boolean> {
  if (!/^gw_oauth_[0-9A-Za-z]{32,64}$/.test(token)) return false;
  const { rows } = await db.query<{ app_connection_id: string }>(
    `SELECT k.app_connection_id FROM api_keys k JOIN app_connections c ON c.id = k.app_connection_id
      WHERE k.key_hash = $1 AND k.kind = 'oauth_token' AND c.oauth_client_id = $2`,
    [sha256Hex(token), client.clientId],
  );
  const connection = rows[0];
  if (!connection) return false;
  const revoked = await revokeConnection(
    db,
    apiKeys,
    { userId: client.clientId },
    connection.app_connection_id,
  );
  return revoked?.changed === true;
}

/** A connected app as the paying organization sees it, with what it spent. */
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

export interface Spend {
  readonly costNano: bigint;
  readonly walletCostNano: bigint;
  readonly requests: number;
}

const CONNECTED_APP_COLUMNS = `c.id, c.org_id, c.app_id, a.name AS app_name, c.oauth_client_id,
  oc.name AS client_name, c.status, u.email AS connected_by_email,
  (SELECT min(k.created_at) FROM api_keys k
    WHERE k.app_connection_id = c.id AND k.kind = 'oauth_token') AS token_issued_at,
  c.created_at, c.revoked_at,
  (extract(epoch FROM c.created_at) * 1000000)::bigint::text AS cursor_us`;
const CONNECTED_APP_FROM = `app_connections c
  JOIN apps a ON a.id = c.app_id
  LEFT JOIN oauth_clients oc ON oc.id = c.oauth_client_id
  LEFT JOIN dashboard_users u ON u.id = c.connected_by_user_id`;

/** A connected app with what it spent this calendar month (UTC) and in total. */
export interface ConnectedAppWithSpend extends ConnectedAppRow {
  readonly spend: { readonly thisMonth: Spend; readonly total: Spend };
}

export function connectedAppView(row: ConnectedAppWithSpend): Record<string, unknown> {
  const { spend } = row;
  const money = (value: Spend) => ({
    cost: formatNano(value.costNano),
    wallet_cost: formatNano(value.walletCostNano),
    requests: value.requests,
  });
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
  const { rows, nextCursor } = await readPage<ConnectedAppRow>(
    db,
    {
      select: `SELECT ${CONNECTED_APP_COLUMNS} FROM ${CONNECTED_APP_FROM}`,
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
  const { rows } = await db.query<ConnectedAppRow>(
    `SELECT ${CONNECTED_APP_COLUMNS} FROM ${CONNECTED_APP_FROM}
      WHERE c.id = $1 AND c.oauth_client_id IS NOT NULL`,
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
async function spendOf(
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
