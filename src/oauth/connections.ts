// OAuth connections: what a user's approval makes (an app connection of the app in the
// organization the user chose to pay, and a single-use code), what the code is exchanged
// for (the connection's `gw_oauth_…` token, an API-key record of that connection), and the
// app's RFC 7009 revocation (a replayed code revokes too). Revocation itself is
// src/admin/connections.ts's revokeConnection, the one rule for every connection; the
// members' view of their connected apps is connected-apps.ts.
import { revokeConnection } from '../admin/connections.js';
import { recordOAuthConnectionEvent } from '../admin/connection-events.js';
import { createAppConnection, createOAuthToken } from '../admin/provisioning.js';
import type { Membership } from '../accounts/users.js';
import { roleAtLeast } from '../accounts/users.js';
import { recordAudit, type Actor } from '../audit/audit.js';
import type { ApiKeyInvalidation } from '../auth/api-key-store.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { sha256Hex } from '../ids.js';
import type { AuthorizationCodes } from './codes.js';
import type { AuthorizingClient, OAuthClientIdentity } from './clients.js';
import { verifierMatches } from './pkce.js';

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
