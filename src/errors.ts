// The error catalogue: every error code the gateway answers with, its HTTP status and its
// message. One place, so docs/errors.md and /openapi.json can be checked against it.
// Messages are safe to log: they never contain a key, token, provider secret or prompt.

export const errorCatalogue = {
  // Request shape
  gw_invalid_json: { status: 400, summary: 'the body is not valid JSON' },
  gw_invalid_request: { status: 400, summary: 'the body or a parameter fails validation' },
  gw_amount_out_of_range: {
    status: 400,
    summary: 'an amount, or the balance it would make, is beyond 1,000,000 (docs/limits.md)',
  },
  gw_body_too_large: { status: 413, summary: 'the body exceeds MAX_BODY_BYTES' },
  gw_route_not_found: { status: 404, summary: 'no such route' },
  gw_method_not_allowed: { status: 405, summary: 'the route exists but not for this method' },
  // API keys (inference routes)
  gw_malformed_or_missing_key: { status: 401, summary: 'API key missing or malformed' },
  gw_unknown_key: { status: 401, summary: 'API key unknown' },
  gw_key_inactive: { status: 401, summary: 'API key revoked or otherwise inactive' },
  gw_model_not_allowed: { status: 403, summary: "the model is outside the key's model policy" },
  gw_unsupported_model: { status: 404, summary: 'the gateway cannot route the model' },
  gw_rate_limited: {
    status: 429,
    summary:
      "the API key's requests-per-minute limit, or its product user's, is reached; see Retry-After",
  },
  gw_concurrency_limited: {
    status: 429,
    summary:
      "the organization's requests waiting for their token count on this instance are at TOKEN_QUEUE_PER_ORG; see Retry-After",
  },
  // Service keys (management routes)
  gw_malformed_or_missing_service_key: {
    status: 401,
    summary: 'Authorization header missing or malformed on a service-key route',
  },
  gw_unknown_service_key: { status: 401, summary: 'no active record matches the service key' },
  gw_service_key_inactive: { status: 403, summary: 'service key expired, revoked or disabled' },
  gw_service_key_scope_required: { status: 403, summary: 'service key lacks the required scope' },
  // Product users and money
  gw_invalid_app_id: { status: 400, summary: 'app_id missing, empty, too long or not text' },
  gw_invalid_external_user_id: {
    status: 400,
    summary: 'external_user_id missing, empty, too long or not text',
  },
  gw_product_user_not_found: { status: 404, summary: 'no user for that app_id/external_user_id' },
  gw_product_user_credits_required: {
    status: 400,
    summary: 'the connection requires product-user attribution and none was sent',
  },
  gw_product_user_blocked: {
    status: 403,
    summary: 'the product user is blocked (whatever their balance)',
  },
  gw_cap_exceeded: { status: 403, summary: 'an organization, connection or user cap blocks it' },
  gw_product_user_allowance_insufficient: {
    status: 403,
    summary: "the user's allowance plus credits cannot cover the estimated cost",
  },
  gw_product_user_credits_insufficient: {
    status: 403,
    summary: 'legacy alias of gw_product_user_allowance_insufficient',
  },
  gw_idempotency_key_reused: {
    status: 409,
    summary: 'the Idempotency-Key was already used with a different request body',
  },
  gw_reservation_insufficient_balance: {
    status: 402,
    summary: 'the organization wallet cannot reserve the estimated cost',
  },
  gw_provider_credentials_unavailable: {
    status: 503,
    summary: 'routing mode byok_only and every eligible provider credential is cooling down',
  },
  // Upstream
  gw_upstream_rate_limited: { status: 429, summary: 'the vendor rate-limited the request' },
  gw_upstream_error: { status: 502, summary: 'the vendor failed or answered unusably' },
  gw_upstream_timeout: { status: 504, summary: 'the vendor did not answer in time' },
  // Dashboard accounts and sessions
  gw_invalid_credentials: {
    status: 401,
    summary: 'sign-in refused (wrong e-mail or password), or a password change (wrong current one)',
  },
  gw_too_many_attempts: {
    status: 429,
    summary:
      'too many failed sign-ins or password changes for this account or address, sign-ups from it, e-mails to one address, password-reset requests or links from one client, or invitations from an organization; see Retry-After',
  },
  gw_session_required: { status: 401, summary: 'no dashboard session, or it expired or was ended' },
  gw_csrf_token_invalid: {
    status: 403,
    summary: 'a dashboard write without the current X-CSRF-Token of the session',
  },
  gw_origin_not_allowed: {
    status: 403,
    summary: "a dashboard write from an Origin that is not the gateway's own or allowed",
  },
  gw_role_forbidden: { status: 403, summary: "the member's role does not allow this" },
  gw_not_found: { status: 404, summary: 'no such object in your organizations' },
  gw_conflict: {
    status: 409,
    summary: 'the object is in a state that does not allow this (e.g. the last owner leaving)',
  },
  gw_signup_disabled: {
    status: 403,
    summary: 'self-service sign-up is off on this gateway (DASHBOARD_SIGNUP)',
  },
  gw_email_disabled: {
    status: 403,
    summary:
      'this gateway sends no e-mail (SMTP_URL unset): no password reset or address verification by e-mail',
  },
  gw_email_unverified: {
    status: 403,
    summary:
      "the account's e-mail address is not verified yet: open the link gw sent (or send it again)",
  },
  gw_email_token_invalid: {
    status: 400,
    summary: 'the link from the e-mail is unknown, used or expired: ask for a new one',
  },
  gw_wallet_topup_disabled: {
    status: 403,
    summary: 'dashboard wallet top-ups are off on this gateway (DASHBOARD_WALLET_TOPUP)',
  },
  gw_provider_credential_rejected: {
    status: 400,
    summary: 'the vendor refused the provider credential when it was checked; nothing was stored',
  },
  gw_provider_credential_unverified: {
    status: 502,
    summary: 'the vendor could not be reached to check the provider credential; nothing was stored',
  },
  gw_provider_credentials_not_configured: {
    status: 503,
    summary: 'provider credentials are off (no CREDENTIALS_MASTER_KEY) or the vendor has no route',
  },
  // OAuth (docs/oauth.md); the token and revocation endpoints answer them in RFC 6749's shape
  gw_redirect_uri_mismatch: {
    status: 400,
    summary:
      'the authorization request or token exchange used a redirect URI that is not an exact match of a registered one (or an unknown client_id)',
  },
  gw_oauth_invalid_client: {
    status: 401,
    summary: 'OAuth client authentication failed (unknown client, wrong or missing secret)',
  },
  gw_oauth_invalid_grant: {
    status: 400,
    summary:
      'the authorization code is unknown, expired, used, or was issued to another client, redirect URI or code verifier',
  },
  gw_oauth_unsupported_grant_type: {
    status: 400,
    summary: 'grant_type is not authorization_code',
  },
  // Webhooks
  gw_webhook_url_not_allowed: {
    status: 400,
    summary:
      'a webhook URL that is not https, or that reaches an address that is not globally reachable (loopback, private, link-local, documentation and the like; the message names which)',
  },
  // Gateway
  gw_unavailable: { status: 503, summary: 'the gateway is shutting down or a dependency is down' },
  gw_internal_error: { status: 500, summary: 'a bug; the request id identifies it in the logs' },
  gw_invalid_config: {
    status: 500,
    summary: 'CLI only: an environment variable fails validation (the gateway exits 78)',
  },
} as const satisfies Record<string, { status: number; summary: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

/**
 * The codes answered in the spec's allowance-rejection shape (SPEC.md, Errors): `error.code` is
 * the HTTP status as text ("403") and the code sits in
 * `error.provider_specific_fields.error.code` (src/billing/rejections.ts writes them).
 */
export const ALLOWANCE_SHAPED_CODES: readonly ErrorCode[] = [
  'gw_product_user_allowance_insufficient',
  'gw_product_user_credits_insufficient',
];

/** An expected failure, returned as a value and rendered in the spec's error shape. */
export interface GwError {
  readonly code: ErrorCode;
  readonly status: number;
  readonly message: string;
  /** Extra fields merged into `error` (e.g. `provider_specific_fields`); never secrets. */
  readonly details?: Readonly<Record<string, unknown>>;
  /** Extra response headers (e.g. `retry-after`). */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The `error.code` written in the body when it differs from `code` (the allowance
   * rejection carries the HTTP status there and its code under provider_specific_fields).
   */
  readonly wireCode?: string;
}

export function gwError(
  code: ErrorCode,
  message: string,
  extras: Pick<GwError, 'details' | 'headers' | 'wireCode'> = {},
): GwError {
  return { code, status: errorCatalogue[code].status, message, ...extras };
}

/**
 * Whether `value` is a refusal. The code must be the catalogue's own: `in` would also take the
 * names every object inherits (`constructor`, `toString`), and a transaction of an idempotent
 * create whose result is taken for a refusal is rolled back (decisions 393, 395).
 */
export function isGwError(value: unknown): value is GwError {
  return (
    typeof value === 'object' &&
    value !== null &&
    'code' in value &&
    typeof (value as { code: unknown }).code === 'string' &&
    Object.hasOwn(errorCatalogue, (value as { code: string }).code) &&
    'status' in value
  );
}

/**
 * How an error body is dressed: the messages protocol adds the vendor's `type` fields; the
 * OAuth token and revocation endpoints answer RFC 6749's `{"error", "error_description"}`;
 * pages a browser opens (the OAuth authorization endpoint) answer an HTML page (rendered by
 * src/http/respond.ts, which also picks each flavor's content type).
 */
export type ErrorFlavor = 'default' | 'messages' | 'oauth' | 'html';

/** RFC 6749's error names (section 5.2) of the codes the OAuth endpoints answer. */
const oauthErrorNames: Partial<Record<ErrorCode, string>> = {
  gw_oauth_invalid_client: 'invalid_client',
  gw_oauth_invalid_grant: 'invalid_grant',
  gw_redirect_uri_mismatch: 'invalid_grant',
  gw_oauth_unsupported_grant_type: 'unsupported_grant_type',
};

/** The RFC 6749 `error` value of a code: its own, else what its status means there. */
export function oauthErrorName(error: GwError): string {
  const named = oauthErrorNames[error.code];
  if (named) return named;
  if (error.status === 503) return 'temporarily_unavailable';
  if (error.status >= 500) return 'server_error';
  if (error.status === 401) return 'invalid_client';
  return 'invalid_request';
}

const messagesErrorTypeByStatus: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'api_error',
  503: 'overloaded_error',
  504: 'api_error',
};

/** The JSON error body of a flavor ('html' pages are rendered by src/http/respond.ts). */
export function errorBody(error: GwError, flavor: ErrorFlavor = 'default'): string {
  if (flavor === 'oauth') {
    // RFC 6749 section 5.2, plus the gateway's own code for clients that know it.
    return JSON.stringify({
      error: oauthErrorName(error),
      error_description: error.message,
      gw_code: error.code,
    });
  }
  const inner: Record<string, unknown> = {
    ...error.details,
    code: error.wireCode ?? error.code,
    message: error.message,
  };
  if (flavor === 'messages') {
    inner.type = messagesErrorTypeByStatus[error.status] ?? 'api_error';
    return JSON.stringify({ type: 'error', error: inner });
  }
  return JSON.stringify({ error: inner });
}

/**
 * Is this thrown error a dependency (Redis, Postgres) being unreachable, rather than a bug?
 * Such failures answer 503 `gw_unavailable`, so clients retry instead of reporting a bug.
 */
export function isDependencyUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { name, code, message } = error as { name?: unknown; code?: unknown; message?: unknown };
  if (name === 'MaxRetriesPerRequestError') return true; // ioredis gave up on a command
  if (name === 'ClusterAllFailedError') return true; // no node of a Redis Cluster answers
  // No measurement of an account's rebuild could be used (account-rebuild.ts, MAX_ATTEMPTS).
  if (name === 'AccountRebuildBusyError') return true;
  if (
    typeof code === 'string' &&
    // 53300: Postgres refuses new connections (max_connections reached); retrying helps.
    // 57014: a statement cancelled (DATABASE_TIMEOUT_MS passed, or an operator cancelled it).
    // 57P01-57P03: the server shutting down, crashed, or not yet accepting connections.
    // 08xxx: the connection failed or was lost. 25006: a write refused as read-only: the
    // primary was demoted to a standby under us (a failover; the pool reconnects to the new
    // primary behind the same address) — gw opens no read-only transaction of its own.
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      '57P01',
      '57P02',
      '57P03',
      '53300',
      '57014',
      '08000',
      '08001',
      '08003',
      '08004',
      '08006',
      '25006',
    ].includes(code)
  ) {
    return true;
  }
  // pg-pool waited DATABASE_TIMEOUT_MS for a connection; pg waited past it for an answer;
  // ioredis waited REDIS_TIMEOUT_MS for an answer (src/redis/command-timeout.ts).
  if (
    typeof message === 'string' &&
    ['timeout exceeded when trying to connect', 'Query read timeout', 'Command timed out'].includes(
      message,
    )
  ) {
    return true;
  }
  // A Redis Cluster whose shard is away (a master down: ioredis gives up after its redirections;
  // a cluster refusing while it is down or moving the slot). A Redis refusing work for a while:
  // full under maxmemory (OOM), a replica left read-only or cut from its master by a failover
  // (READONLY, MASTERDOWN), too few replicas to write (NOREPLICAS), busy with a long script
  // (BUSY), loading its data after a restart (LOADING).
  return (
    typeof message === 'string' &&
    (/Connection is closed|Connection terminated|Too many Cluster redirections/.test(message) ||
      /^(CLUSTERDOWN|TRYAGAIN|OOM|READONLY|MASTERDOWN|NOREPLICAS|BUSY|LOADING) /.test(message))
  );
}
