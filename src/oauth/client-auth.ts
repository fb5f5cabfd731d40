// Authentication of an OAuth client at the token and revocation endpoints (RFC 6749 section
// 2.3.1): client_id in the form; a confidential client's secret in the form or as HTTP Basic,
// never both; a public client presents no secret. Its answer is the caller kind oauth_client.
// A confidential client's current secret authenticates, and so does one retired by a rotation
// until its grace ends (decision 374); an expired one is refused as a wrong one.
import { timingSafeEqual } from 'node:crypto';
import type { DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { sha256Hex } from '../ids.js';
import { CLIENT_ID_FORMAT, type OAuthClientIdentity } from './clients.js';

const INVALID_CLIENT = 'client authentication failed';

/**
 * The ways a client authenticates, as RFC 8414 names them: its secret as HTTP Basic or in the
 * form (confidential clients), or its client_id alone (public clients).
 */
export const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'] as const;

/** Authenticates the client of a token or revocation request (the caller kind oauth_client). */
export class OAuthClientAuthenticator {
  constructor(private readonly db: DbPool) {}

  async authenticate(
    headers: Readonly<Record<string, string>>,
    form: Readonly<Record<string, unknown>>,
  ): Promise<OAuthClientIdentity | GwError> {
    const presented = readClientCredentials(headers, form);
    if ('code' in presented) return presented;
    const { clientId, secret, basic } = presented;
    // RFC 6749 section 5.2: a client that tried HTTP Basic is told so in WWW-Authenticate.
    const refusal = (message: string): GwError =>
      gwError('gw_oauth_invalid_client', message, {
        ...(basic && { headers: { 'www-authenticate': 'Basic realm="gw", charset="UTF-8"' } }),
      });
    if (!CLIENT_ID_FORMAT.test(clientId)) return refusal(`${INVALID_CLIENT}: unknown client_id`);
    // The grace ends by the database's clock, the one the rotation set it by.
    const { rows } = await this.db.query<{
      app_id: string;
      org_id: string;
      client_secret_hash: string | null;
      retired_hashes: string[];
    }>(
      `SELECT app_id, org_id, client_secret_hash,
              ARRAY(SELECT retired->>'hash' FROM jsonb_array_elements(retired_secrets) retired
                     WHERE (retired->>'expires_at')::timestamptz > now()) AS retired_hashes
         FROM oauth_clients
        WHERE id = $1 AND status = 'active'`,
      [clientId],
    );
    const row = rows[0];
    if (!row) return refusal(`${INVALID_CLIENT}: unknown client_id`);
    const confidential = row.client_secret_hash !== null;
    if (confidential) {
      if (secret === undefined) {
        return refusal(
          `${INVALID_CLIENT}: this client is confidential: send its client_secret (form field or HTTP Basic)`,
        );
      }
      if (!matchesAny(sha256Hex(secret), [row.client_secret_hash!, ...row.retired_hashes])) {
        return refusal(`${INVALID_CLIENT}: wrong client_secret`);
      }
    } else if (secret !== undefined) {
      return refusal(`${INVALID_CLIENT}: this client is public and has no client_secret`);
    }
    return { clientId, appId: row.app_id, orgId: row.org_id, confidential };
  }
}

/** Whether `presented` is one of `accepted`, every one compared (no early exit). */
function matchesAny(presented: string, accepted: readonly string[]): boolean {
  let matched = false;
  for (const hash of accepted) matched = hashesMatch(presented, hash) || matched;
  return matched;
}

function hashesMatch(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

type PresentedClient = { clientId: string; secret: string | undefined; basic: boolean } | GwError;

/** The client's id and secret from HTTP Basic or the form (one method only, RFC 6749 2.3). */
function readClientCredentials(
  headers: Readonly<Record<string, string>>,
  form: Readonly<Record<string, unknown>>,
): PresentedClient {
  const formId = typeof form.client_id === 'string' ? form.client_id : undefined;
  const formSecret = typeof form.client_secret === 'string' ? form.client_secret : undefined;
  const authorization = headers.authorization;
  if (authorization === undefined) {
    if (formId === undefined || formId === '') {
      return gwError('gw_oauth_invalid_client', `${INVALID_CLIENT}: send client_id`);
    }
    return { clientId: formId, secret: formSecret || undefined, basic: false };
  }
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  const refusal = (message: string): GwError =>
    gwError('gw_oauth_invalid_client', message, {
      headers: { 'www-authenticate': 'Basic realm="gw", charset="UTF-8"' },
    });
  if (!match) {
    return refusal(
      `${INVALID_CLIENT}: the Authorization header must be HTTP Basic with the client_id and client_secret`,
    );
  }
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const separator = decoded.indexOf(':');
  if (separator < 0) return refusal(`${INVALID_CLIENT}: HTTP Basic credentials without a colon`);
  let clientId: string;
  let secret: string;
  try {
    // RFC 6749 section 2.3.1: both are form-urlencoded before Basic encoding.
    clientId = decodeURIComponent(decoded.slice(0, separator).replace(/\+/g, ' '));
    secret = decodeURIComponent(decoded.slice(separator + 1).replace(/\+/g, ' '));
  } catch {
    return refusal(`${INVALID_CLIENT}: HTTP Basic credentials are not form-urlencoded`);
  }
  if (formSecret !== undefined) {
    return gwError(
      'gw_invalid_request',
      'send the client_secret in the form or as HTTP Basic, not both (RFC 6749 section 2.3)',
    );
  }
  if (formId !== undefined && formId !== clientId) {
    return refusal(`${INVALID_CLIENT}: client_id in the form differs from HTTP Basic`);
  }
  return { clientId, secret: secret === '' ? undefined : secret, basic: true };
}
