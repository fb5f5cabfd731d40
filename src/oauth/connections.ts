// OAuth connections: what a user's approval gives (a single-use code bound to the organization
// the user chose to pay), what the code is exchanged for (an app connection of the app in that
// organization, and its `gw_oauth_…` token, an API-key record of that connection, made
// together), and the app's RFC 7009 revocation (a replayed code revokes too). Revocation
// itself is src/admin/connections.ts's revokeConnection, the one rule for every connection;
// the members' view of their connected apps is connected-apps.ts.
import { checkCapSettings, writeCapIn, type CapInvalidation } from '../admin/caps.js';
import { revokeConnection } from '../admin/connections.js';
import { recordOAuthConnectionEvent } from '../admin/connection-events.js';
import { createOAuthToken } from '../admin/provisioning.js';
import { APP_CONNECTING_ROLE, roleAtLeast, type Membership, type Role } from '../accounts/users.js';
import { recordAudit } from '../audit/audit.js';
import type { ApiKeyInvalidation } from '../auth/api-key-store.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { newId, sha256Hex } from '../ids.js';
import { numericToNano, SETTLEMENT_CURRENCY } from '../money.js';
import type { AuthorizationCodes, CodeGrant } from './codes.js';
import type { AuthorizingClient, OAuthClientIdentity } from './clients.js';
import { verifierMatches } from './pkce.js';

/** The organizations a user may choose to pay for an app: those where they may connect apps. */
export function payingOrgsOf(memberships: readonly Membership[]): Membership[] {
  return memberships.filter((membership) => roleAtLeast(membership.role, APP_CONNECTING_ROLE));
}

export interface Approval {
  readonly client: AuthorizingClient;
  readonly redirectUri: string;
  readonly codeChallenge: string;
  readonly userId: string;
  /** The paying organization; the caller checked the user may connect apps there. */
  readonly orgId: string;
  /** The monthly cap the user set on the consent page (nano-units; null: none). */
  readonly capAmountNano: bigint | null;
}

/**
 * A user approved an app: a code bound to everything the exchange must present again, and to
 * the id of the connection its exchange will make. Nothing is written to Postgres: the
 * connection exists once it has its token, so a code that expires, is refused or is never
 * presented leaves no connection behind.
 */
export async function approve(
  codes: AuthorizationCodes,
  approval: Approval,
): Promise<{ code: string; connectionId: string }> {
  const connectionId = newId('conn');
  const code = await codes.issue({
    clientId: approval.client.clientId,
    redirectUri: approval.redirectUri,
    codeChallenge: approval.codeChallenge,
    userId: approval.userId,
    orgId: approval.orgId,
    connectionId,
    capAmountNano: approval.capAmountNano,
  });
  return { code, connectionId };
}

export interface Exchange {
  readonly code: string;
  readonly redirectUri: string | undefined;
  readonly codeVerifier: string | undefined;
  /** What is wrong with the request itself (a missing parameter…): the answer, code spent. */
  readonly requestProblem?: GwError | undefined;
}

type SpentCode = { readonly kind: 'taken'; readonly grant: CodeGrant } | GwError;

/**
 * Spends a presented code, however its request ends: its grant the first time; a refusal
 * after that, when the connection its first exchange made (and that connection's token) is
 * revoked (RFC 6749 section 4.1.2).
 */
export async function spendCode(
  db: DbPool,
  codes: AuthorizationCodes,
  apiKeys: ApiKeyInvalidation,
  code: string,
): Promise<SpentCode> {
  const taken = await codes.take(code);
  if (taken.kind === 'taken') return taken;
  if (taken.kind === 'unknown') {
    return gwError('gw_oauth_invalid_grant', 'the authorization code is unknown or expired');
  }
  // The connection's own client is named in the audit log: the code was issued to it.
  const { rows } = await db.query<{ oauth_client_id: string }>(
    'SELECT oauth_client_id FROM app_connections WHERE id = $1',
    [taken.connectionId],
  );
  const made = rows[0];
  if (!made) {
    return gwError(
      'gw_oauth_invalid_grant',
      'the authorization code was already presented; no token was issued from it',
    );
  }
  await revokeConnection(db, apiKeys, { userId: made.oauth_client_id }, taken.connectionId);
  return gwError(
    'gw_oauth_invalid_grant',
    'the authorization code was already used; the token issued from it is revoked',
  );
}

/**
 * The token exchange (RFC 6749 section 4.1.3, RFC 7636 section 4.6). A code is one attempt:
 * once presented it is gone, whatever the outcome; only an exchange that succeeds makes the
 * connection (with its token). A code presented again revokes the connection and the token
 * its first exchange made (RFC 6749 section 4.1.2).
 */
export async function exchange(
  db: DbPool,
  codes: AuthorizationCodes,
  apiKeys: ApiKeyInvalidation,
  caps: Pick<CapInvalidation, 'capSet'>,
  client: OAuthClientIdentity,
  request: Exchange,
): Promise<{ accessToken: string; connectionId: string } | GwError> {
  const spent = await spendCode(db, codes, apiKeys, request.code);
  if (request.requestProblem) return request.requestProblem;
  if ('code' in spent) return spent;
  const { grant } = spent;
  const refusal =
    grant.clientId !== client.clientId
      ? gwError('gw_oauth_invalid_grant', 'the authorization code was issued to another client')
      : grant.redirectUri !== request.redirectUri
        ? gwError(
            'gw_redirect_uri_mismatch',
            'redirect_uri differs from the one of the authorization request',
          )
        : !verifierMatches(request.codeVerifier ?? '', grant.codeChallenge)
          ? gwError(
              'gw_oauth_invalid_grant',
              "code_verifier does not match the authorization request's code_challenge",
            )
          : undefined;
  if (refusal) return refusal;
  const issued = await connectAndIssue(db, caps, grant);
  if ('code' in issued) return issued;
  // A replay that came while the connection was being made found nothing to revoke.
  if (await codes.presentedAgain(request.code)) {
    await revokeConnection(db, apiKeys, { userId: grant.clientId }, grant.connectionId);
    return gwError(
      'gw_oauth_invalid_grant',
      'the authorization code was presented twice; the connection it made is revoked',
    );
  }
  return { accessToken: issued.rawToken, connectionId: grant.connectionId };
}

/**
 * The connection the grant approved, in the paying organization, with its token and the
 * spending cap the user set on the consent page (its app-connection cap, through the caps
 * service): in one transaction, and only while the approving user still may connect apps
 * there and the app and its client still exist (their removal, locked out meanwhile, revokes
 * it after). No instance can have cached the new connection's cap rule (nothing named it
 * before its token), so the commit alone makes its first request see the cap (decision 415).
 */
async function connectAndIssue(
  db: DbPool,
  caps: Pick<CapInvalidation, 'capSet'>,
  grant: CodeGrant,
): Promise<{ rawToken: string } | GwError> {
  return withTransaction(db, async (tx) => {
    const { rows: approvers } = await tx.query<{ role: Role }>(
      'SELECT role FROM org_memberships WHERE org_id = $1 AND user_id = $2 FOR SHARE',
      [grant.orgId, grant.userId],
    );
    const role = approvers[0]?.role;
    if (role === undefined || !roleAtLeast(role, APP_CONNECTING_ROLE)) {
      return gwError(
        'gw_oauth_invalid_grant',
        'the user who approved this code may no longer connect apps to that organization',
      );
    }
    const { rows: clients } = await tx.query<{ app_id: string; app_name: string }>(
      `SELECT c.app_id, a.name AS app_name FROM oauth_clients c JOIN apps a ON a.id = c.app_id
        WHERE c.id = $1 AND c.status = 'active' AND a.status = 'active' FOR SHARE OF c, a`,
      [grant.clientId],
    );
    const app = clients[0];
    if (!app) {
      return gwError('gw_oauth_invalid_grant', 'the app or its OAuth client has been deleted');
    }
    const inserted = await tx.query(
      `INSERT INTO app_connections (id, org_id, app_id, name, oauth_client_id, connected_by_user_id)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
      [grant.connectionId, grant.orgId, app.app_id, app.app_name, grant.clientId, grant.userId],
    );
    // A code from a version that made the connection at approval (a rolling upgrade) finds
    // it made: it gets its token if the connection is still active.
    const madeNow = inserted.rowCount === 1;
    if (madeNow) {
      await recordAudit(tx, {
        orgId: grant.orgId,
        userId: grant.userId,
        action: 'oauth_connection.create',
        objectType: 'app_connection',
        objectId: grant.connectionId,
        details: { app_id: app.app_id, oauth_client_id: grant.clientId },
      });
      if (grant.capAmountNano !== null) {
        const settings = { amountNano: grant.capAmountNano, currency: SETTLEMENT_CURRENCY };
        checkCapSettings('app_connection', settings);
        await writeCapIn(
          tx,
          caps,
          { userId: grant.userId },
          { scope: 'app_connection', appConnectionId: grant.connectionId },
          settings,
        );
      }
    } else {
      const { rows } = await tx.query<{ status: string }>(
        `SELECT status FROM app_connections WHERE id = $1 AND org_id = $2 AND oauth_client_id = $3
            AND NOT EXISTS (SELECT 1 FROM api_keys WHERE app_connection_id = $1)
          FOR UPDATE`,
        [grant.connectionId, grant.orgId, grant.clientId],
      );
      if (rows[0]?.status !== 'active') {
        return gwError(
          'gw_oauth_invalid_grant',
          'the connection this code was for has been revoked: ask the user to connect again',
        );
      }
    }
    const token = await createOAuthToken(tx, {
      orgId: grant.orgId,
      appId: app.app_id,
      appConnectionId: grant.connectionId,
    });
    await recordAudit(tx, {
      orgId: grant.orgId,
      userId: grant.clientId,
      action: 'oauth_token.issue',
      objectType: 'api_key',
      objectId: token.id,
      details: { app_connection_id: grant.connectionId },
    });
    // After the token: the event's connected app shows when its token was issued.
    if (madeNow) {
      await recordOAuthConnectionEvent(tx, {
        type: 'oauth_connection.created',
        orgId: grant.orgId,
        appConnectionId: grant.connectionId,
        appId: app.app_id,
        oauthClientId: grant.clientId,
        occurredAt: new Date(),
      });
    }
    return { rawToken: token.rawToken };
  });
}

/** An active connection of an app the user is asked to connect again, as the consent page says. */
export interface ExistingConnection {
  readonly orgId: string;
  /** Its app-connection cap (nano-units), null: none. */
  readonly capAmountNano: bigint | null;
}

/**
 * The active connections already made through this client in these organizations, newest
 * first: approving again makes another connection beside them, each with its own cap
 * (decision 415), and the consent page says so. The 20 newest, and the newest of each
 * organization however many are newer elsewhere: the page fills the cap field from it
 * (decision 446).
 */
export async function existingConnections(
  db: Pick<DbPool, 'query'>,
  clientId: string,
  orgIds: readonly string[],
): Promise<ExistingConnection[]> {
  if (orgIds.length === 0) return [];
  const { rows } = await db.query<{ org_id: string; amount: string | null }>(
    `WITH active AS (
       SELECT c.id, c.org_id, c.created_at, r.amount::text AS amount FROM app_connections c
         LEFT JOIN cap_rules r ON r.scope = 'app_connection' AND r.status = 'active'
                              AND r.app_connection_id = c.id
        WHERE c.oauth_client_id = $1 AND c.org_id = ANY($2::text[]) AND c.status = 'active')
     SELECT org_id, amount FROM (
       (SELECT * FROM active ORDER BY created_at DESC, id DESC LIMIT 20)
       UNION
       (SELECT DISTINCT ON (org_id) * FROM active ORDER BY org_id, created_at DESC, id DESC)
     ) listed
     ORDER BY created_at DESC, id DESC`,
    [clientId, orgIds],
  );
  return rows.map((row) => ({
    orgId: row.org_id,
    capAmountNano: row.amount === null ? null : numericToNano(row.amount),
  }));
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
