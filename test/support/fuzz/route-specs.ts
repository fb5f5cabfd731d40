// Every route of the gateway as the fuzz suite sees it: method, path, which key it takes, a
// valid request to start from, and the fields, query parameters and headers worth attacking.
import {
  allHostileValues,
  hostileAmounts,
  hostileCodes,
  hostileCounts,
  hostileOthers,
  hostileStrings,
  type Hostile,
} from './hostile-values.js';
import type { Random } from './random.js';

/** A signed-in dashboard browser: its session cookie and CSRF token. */
export interface DashboardSession {
  readonly cookie: string;
  readonly csrfToken: string;
}

export interface FuzzTarget {
  readonly apiKey: string;
  readonly serviceKey: string;
  readonly revokedApiKey: string;
  readonly orgId: string;
  readonly appId: string;
  /** External user ids with caps and credits set up (holds on user accounts get exercised). */
  readonly users: readonly string[];
  /** A user whose base allowance is one nano-unit: only the probes' huge grants can pay. */
  readonly hugeCreditUser: string;
  /** `host` and `origin` a browser on the gateway's own dashboard sends. */
  readonly host: string;
  readonly origin: string;
  /** The owner's session, used by every dashboard route but logout. */
  readonly session: DashboardSession;
  /** A second session of the owner, for logout to end. */
  readonly spareSession: DashboardSession;
  /**
   * A session of another user, whose password the fuzz tries to change (never with the right
   * current password: a change would end the session).
   */
  readonly passwordSession: DashboardSession;
  /** A session of the login user, for sign-out everywhere to end (with the login's others). */
  readonly everywhereSession: DashboardSession;
  /** A user whose password the login inputs try (throttling it harms nothing else). */
  readonly loginEmail: string;
  readonly loginPassword: string;
  /** A connection and a member the fuzz may change or remove (not the ones inference uses). */
  readonly spareConnectionId: string;
  readonly spareMemberId: string;
  readonly spareMemberEmail: string;
  /** An invitation of the org the fuzz may revoke, and one to the owner it may answer. */
  readonly spareInvitationId: string;
  readonly inboundInvitationId: string;
  /** Its accept token (decision 365). */
  readonly inboundInvitationToken: string;
  /** An API key and a service key the fuzz may rotate, revoke or disable. */
  readonly spareApiKeyId: string;
  readonly spareServiceKeyId: string;
  /** A product user and one of its credit grants the fuzz may block, grant to or revoke. */
  readonly spareProductUserId: string;
  readonly spareGrantId: string;
  /** An organization of the owner that inference does not use (its cap, its wallet). */
  readonly spareOrgId: string;
  /** An app without connections the fuzz may rename or delete. */
  readonly spareAppId: string;
  /** A provider credential granted only to the spare connection (never serves the fuzz). */
  readonly spareCredentialId: string;
  /** A webhook endpoint the fuzz may change, test, rotate or delete. */
  readonly spareWebhookId: string;
  /** OAuth: a confidential client (its secret), a public one, and their redirect URI. */
  readonly oauthClientId: string;
  readonly oauthClientSecret: string;
  readonly oauthPublicClientId: string;
  readonly oauthRedirectUri: string;
  /** A token of the public client the fuzz may revoke, and a client it may delete. */
  readonly oauthToken: string;
  readonly spareOAuthClientId: string;
  /** A confidential client whose secret the fuzz may rotate (no other case uses its secret). */
  readonly rotatableOAuthClientId: string;
  /** A connected app (OAuth connection) of the owner's the fuzz may revoke. */
  readonly spareConnectedAppId: string;
}

export interface FieldSpec {
  readonly path: string;
  readonly pool: readonly Hostile[];
}

export interface RouteSpec {
  readonly method: string;
  /** As declared, with `{name}` path parameters. */
  readonly path: string;
  /** `session`: the dashboard's cookie, plus the CSRF token on writes; `browser`: no caller. */
  readonly auth: 'api' | 'service' | 'session' | 'browser' | 'none';
  /** Valid values of the path parameters. */
  readonly params?: (target: FuzzTarget) => Record<string, string>;
  /** Share of the generated inputs. */
  readonly weight: number;
  readonly body?: (target: FuzzTarget, random: Random) => Record<string, unknown>;
  /** The body is form-encoded (`application/x-www-form-urlencoded`), not JSON. */
  readonly form?: boolean;
  readonly fields?: readonly FieldSpec[];
  readonly query?: (target: FuzzTarget, random: Random) => Record<string, string>;
  /** Headers the route reads, worth attacking besides the generic ones. */
  readonly headers?: (target: FuzzTarget, random: Random) => Record<string, string | undefined>;
  /** It may take an Idempotency-Key (a dashboard create, decision 372): worth attacking. */
  readonly idempotent?: boolean;
}

const field = (path: string, ...pools: ReadonlyArray<readonly Hostile[]>): FieldSpec => ({
  path,
  pool: pools.flat(),
});
const strings = hostileStrings;
const anything = allHostileValues;
const modelNames: readonly Hostile[] = [
  { name: 'model-unknown', value: 'vendor_b/does-not-exist' },
  { name: 'model-unknown-vendor', value: 'vendor_z/gpt-4o-mini' },
  { name: 'model-vendor-only', value: 'vendor_b/' },
  { name: 'model-wrong-vendor-route', value: 'vendor_b/gpt-4o-mini' },
  { name: 'model-with-nul', value: 'vendor_b/gpt-4o-mini\u0000' },
  { name: 'model-case', value: 'VENDOR_B/GPT-4O-MINI' },
  ...strings,
];

const pickUser = (target: FuzzTarget, random: Random): string =>
  random.chance(0.2) ? `fuzz-${random.alnum(6)}` : random.pick(target.users);

function chatBody(target: FuzzTarget, random: Random): Record<string, unknown> {
  return {
    model: random.pick(['vendor_b/gpt-4o-mini', 'vendor_b/gpt-4o', 'vendor_a/claude-haiku-4-5']),
    messages: [{ role: 'user', content: 'say something short' }],
    max_tokens: 1 + random.int(64),
    user: pickUser(target, random),
    ...(random.chance(0.25) && { stream: true }),
  };
}

function messagesBody(target: FuzzTarget, random: Random): Record<string, unknown> {
  return {
    model: random.pick(['vendor_a/claude-haiku-4-5', 'vendor_a/claude-sonnet-4-5']),
    max_tokens: 1 + random.int(64),
    messages: [{ role: 'user', content: 'say something short' }],
    metadata: { user_id: pickUser(target, random) },
    ...(random.chance(0.25) && { stream: true }),
  };
}

const productUserQuery = (target: FuzzTarget, random: Random): Record<string, string> => ({
  app_id: target.appId,
  external_user_id: pickUser(target, random),
});

export const routeSpecs: readonly RouteSpec[] = [
  { method: 'GET', path: '/healthz', auth: 'none', weight: 1 },
  { method: 'GET', path: '/readyz', auth: 'none', weight: 1 },
  { method: 'GET', path: '/metrics', auth: 'none', weight: 1 },
  { method: 'GET', path: '/openapi.json', auth: 'none', weight: 1 },
  {
    method: 'GET',
    path: '/v1/models',
    auth: 'api',
    weight: 2,
    headers: (_target, random) => (random.chance(0.5) ? { 'vendor-version': '2023-06-01' } : {}),
  },
  {
    method: 'GET',
    path: '/v1/models/{model_id*}',
    auth: 'api',
    weight: 1,
    params: (_target) => ({ 'model_id*': 'vendor_b/gpt-4o-mini' }),
    headers: (_target, random) => (random.chance(0.5) ? { 'vendor-version': '2023-06-01' } : {}),
  },
  { method: 'GET', path: '/inference-keys/usage', auth: 'api', weight: 2 },
  {
    method: 'POST',
    path: '/v1/chat/completions',
    auth: 'api',
    weight: 26,
    body: chatBody,
    headers: (target, random) =>
      random.chance(0.2) ? { 'x-gw-external-user-id': pickUser(target, random) } : {},
    fields: [
      field('model', modelNames),
      field('messages', hostileOthers),
      field('messages.0.role', strings),
      field('messages.0.content', anything),
      field('messages.0.content.0.text', strings),
      field('messages.1', hostileOthers),
      field('stream', anything),
      field('stream_options', hostileOthers),
      field('stream_options.include_usage', anything),
      field('max_tokens', hostileCounts),
      field('max_completion_tokens', hostileCounts),
      field('n', hostileCounts),
      field('user', strings),
      field('metadata', hostileOthers),
      field('metadata.external_user_id', strings),
      field('metadata.product_user.display_name', strings),
      field('metadata.product_user.email', strings),
      field('metadata.product_user.metadata', hostileOthers, strings),
      field('product_user_display_name', strings),
      field('product_user_email', strings),
      field('product_user_metadata', hostileOthers, strings),
      field('tools', hostileOthers),
      field('tools.0.type', strings),
      field('tools.0.function.name', strings),
      field('tools.0.function.parameters', hostileOthers),
      field('tool_choice', anything),
      field('response_format', anything),
      field('stop', anything),
      field('logit_bias', anything),
      field('temperature', hostileCounts),
      field('seed', hostileCounts),
      field('x_unknown_passthrough', anything),
    ],
  },
  {
    method: 'POST',
    path: '/v1/messages',
    auth: 'api',
    weight: 18,
    body: messagesBody,
    headers: (target, random) => ({
      ...(random.chance(0.3) && { 'vendor-version': '2023-06-01' }),
      ...(random.chance(0.2) && { 'x-gw-external-user-id': pickUser(target, random) }),
    }),
    fields: [
      field('model', modelNames),
      field('max_tokens', hostileCounts),
      field('messages', hostileOthers),
      field('messages.0.role', strings),
      field('messages.0.content', anything),
      field('messages.0.content.0.text', strings),
      field('messages.0.content.0.type', strings),
      field('system', anything),
      field('system.0.text', strings),
      field('stream', anything),
      field('metadata', hostileOthers),
      field('metadata.user_id', anything),
      field('metadata.external_user_id', strings),
      field('tools', hostileOthers),
      field('tools.0.name', strings),
      field('tools.0.input_schema', hostileOthers),
      field('temperature', hostileCounts),
      field('stop_sequences', anything),
      field('top_k', hostileCounts),
      field('thinking.budget_tokens', hostileCounts),
      field('x_unknown_passthrough', anything),
    ],
  },
  {
    method: 'POST',
    path: '/v1/messages/count_tokens',
    auth: 'api',
    weight: 7,
    body: (_target, random) => ({
      model: random.pick(['vendor_a/claude-haiku-4-5', 'vendor_b/gpt-4o-mini']),
      messages: [{ role: 'user', content: 'count me' }],
    }),
    fields: [
      field('model', modelNames),
      field('messages', hostileOthers),
      field('messages.0.role', strings),
      field('messages.0.content', anything),
      field('messages.0.content.0.text', strings),
      field('system', anything),
      field('tools', hostileOthers),
      field('tools.0.name', strings),
    ],
  },
  {
    method: 'GET',
    path: '/product-users/by-external-id',
    auth: 'service',
    weight: 5,
    query: productUserQuery,
  },
  {
    method: 'PUT',
    path: '/product-users/by-external-id',
    auth: 'service',
    weight: 7,
    body: (target, random) => ({
      app_id: target.appId,
      external_user_id: pickUser(target, random),
      display_name: 'Fuzz User',
    }),
    fields: [
      field('app_id', strings),
      field('external_user_id', strings),
      field('display_name', strings, hostileOthers),
      field('email', strings),
      field('allowance_starts_at', hostileCodes, strings),
      field('x_unknown', anything),
    ],
  },
  {
    method: 'GET',
    path: '/product-users/by-external-id/credit-summary',
    auth: 'service',
    weight: 5,
    query: (target, random) => ({
      ...productUserQuery(target, random),
      ...(random.chance(0.3) && { currency: 'USD' }),
    }),
  },
  {
    method: 'POST',
    path: '/product-users/by-external-id/credit-grants',
    auth: 'service',
    weight: 7,
    body: (target, random) => ({
      app_id: target.appId,
      external_user_id: pickUser(target, random),
      amount: random.pick(['0.01', '0.50', '1']),
      reason: 'fuzz',
    }),
    headers: (_target, random) =>
      random.chance(0.3) ? { 'idempotency-key': `fuzz-${random.alnum(12)}` } : {},
    fields: [
      field('app_id', strings),
      field('external_user_id', strings),
      field('amount', hostileAmounts, hostileAmounts, strings),
      field('currency', hostileCodes, strings),
      field('expires_at', hostileCodes, strings),
      field('reason', strings),
      field('x_unknown', anything),
    ],
  },
];

const page = (): Record<string, string> => ({ limit: '10' });
const dashboardWrite = (
  method: string,
  path: string,
  weight: number,
  params: RouteSpec['params'],
  body: RouteSpec['body'],
  fields: readonly FieldSpec[],
): RouteSpec => ({
  method,
  path,
  auth: 'session',
  weight,
  params,
  body,
  fields,
  ...(method === 'POST' && { headers: idempotencyKeyHeader, idempotent: true }),
});
/**
 * An Idempotency-Key as the dashboard sends one with a create: often none, else a fresh one or
 * one of a few shared ones (replays of the first answer, or refusals for another body).
 */
const idempotencyKeyHeader = (_target: FuzzTarget, random: Random) =>
  random.chance(0.5)
    ? {
        'idempotency-key': random.chance(0.5)
          ? `fuzz-${random.alnum(12)}`
          : `fuzz-shared-${random.pick(['a', 'b', 'c'])}`,
      }
    : {};
const ofOrg = (target: FuzzTarget) => ({ org_id: target.orgId });
const ofApp = (target: FuzzTarget) => ({ app_id: target.appId });
const ofConnection = (target: FuzzTarget) => ({ connection_id: target.spareConnectionId });
const ofApiKey = (target: FuzzTarget) => ({ id: target.spareApiKeyId });
/** An API key's request-rate limits (integers 1..1,000,000 or null). */
const rateLimitFields = [
  field('requests_per_minute', hostileCounts, anything),
  field('product_user_requests_per_minute', hostileCounts, anything),
];
const ofServiceKey = (target: FuzzTarget) => ({ id: target.spareServiceKeyId });
const ofMember = (target: FuzzTarget) => ({ org_id: target.orgId, user_id: target.spareMemberId });
const ofInvitation = (target: FuzzTarget) => ({ invitation_id: target.spareInvitationId });
const ofInboundInvitation = (target: FuzzTarget) => ({
  invitation_id: target.inboundInvitationId,
});
const ofProductUser = (target: FuzzTarget) => ({
  product_end_user_id: target.spareProductUserId,
});
const ofGrant = (target: FuzzTarget) => ({ grant_id: target.spareGrantId });
const ofSpareOrg = (target: FuzzTarget) => ({ org_id: target.spareOrgId });
const ofSpareApp = (target: FuzzTarget) => ({ app_id: target.spareAppId });
const ofCredential = (target: FuzzTarget) => ({ credential_id: target.spareCredentialId });
const ofCredentialGrant = (target: FuzzTarget) => ({
  credential_id: target.spareCredentialId,
  app_connection_id: target.spareConnectionId,
});
const amountText = (random: Random): string => `${random.int(100)}.${random.int(1000)}`;
const capModes: readonly Hostile[] = [
  { name: 'mode-enforce', value: 'enforce' },
  { name: 'mode-null', value: null },
  { name: 'mode-unknown', value: 'sometimes' },
  ...hostileStrings,
];
const capFields = (...extra: FieldSpec[]): FieldSpec[] => [
  field('amount', hostileAmounts, hostileAmounts, strings, hostileOthers),
  ...extra,
  field('x_unknown', anything),
];
/** The cap routes of one level: read, set (`body`, `fields`) and clear. */
const capSpecs = (
  path: string,
  params: RouteSpec['params'],
  body: RouteSpec['body'],
  fields: readonly FieldSpec[],
): RouteSpec[] => [
  { method: 'GET', path, auth: 'session', weight: 0.7, params },
  dashboardWrite('PUT', path, 1.2, params, body, fields),
  { method: 'DELETE', path, auth: 'session', weight: 0.4, params },
];
const ofWebhook = (target: FuzzTarget) => ({
  org_id: target.orgId,
  webhook_id: target.spareWebhookId,
});
const webhookUrls: readonly Hostile[] = [
  { name: 'url-loopback', value: 'https://127.0.0.1/hook' },
  { name: 'url-metadata', value: 'https://169.254.169.254/latest/meta-data/' },
  { name: 'url-localhost', value: 'https://localhost/hook' },
  { name: 'url-http', value: 'http://hooks.example.invalid/hook' },
  { name: 'url-credentials', value: 'https://u:p@hooks.example.invalid/' },
  { name: 'url-ipv6-mapped', value: 'https://[::ffff:10.0.0.1]/' },
  { name: 'url-javascript', value: 'javascript:alert(1)' },
];
const eventTypeLists: readonly Hostile[] = [
  { name: 'events-unknown', value: ['nope'] },
  { name: 'events-many', value: Array.from({ length: 100 }, () => 'cap.threshold') },
  { name: 'events-not-list', value: 'cap.threshold' },
];
const webhookFields = [
  field('url', webhookUrls, strings, hostileOthers),
  field('description', strings, hostileOthers),
  field('event_types', eventTypeLists, anything),
  field('x_unknown', anything),
];
const usageGroups: readonly string[] = ['day', 'model', 'connection', 'product_user', 'week', ''];
const usageDays: readonly string[] = [
  '2026-01-01',
  '2026-02-30',
  '2026-01-01T00:00:00Z',
  '2026-01-01T12:00:00+02:00',
  'yesterday',
  '1900-01-01',
  '99999-01-01',
  '%00',
];
const roles: readonly Hostile[] = [
  { name: 'role-owner', value: 'owner' },
  { name: 'role-unknown', value: 'superuser' },
  { name: 'role-uppercase', value: 'ADMIN' },
  ...strings,
];
const connectionFields = [
  field('name', strings, hostileOthers),
  field('credit_mode', strings, hostileOthers),
  field('overrun_policy', strings),
  field('requires_product_user', anything),
  field('x_unknown', anything),
];
const connectionBody = (_target: FuzzTarget, random: Random) => ({
  name: `fuzz connection ${random.alnum(4)}`,
  credit_mode: random.pick(['enforce', 'track_only']),
});

/** The dashboard's routes (sessions, orgs, apps, connections, members, invitations, audit log, models). */
export const dashboardRouteSpecs: readonly RouteSpec[] = [
  {
    method: 'POST',
    path: '/auth/login',
    auth: 'browser',
    weight: 1,
    body: (target, random) => ({
      email: target.loginEmail,
      password: random.chance(0.3) ? target.loginPassword : `wrong-${random.alnum(8)}`,
    }),
    fields: [field('email', strings, hostileOthers), field('password', strings, hostileOthers)],
  },
  { method: 'POST', path: '/auth/logout', auth: 'session', weight: 0.5 },
  { method: 'POST', path: '/auth/logout-everywhere', auth: 'session', weight: 0.3 },
  {
    method: 'POST',
    path: '/auth/password',
    auth: 'session',
    weight: 0.8,
    body: (target, random) => ({
      current_password: `wrong-${random.alnum(8)}`,
      new_password: random.chance(0.7) ? target.loginPassword : random.alnum(random.int(20)),
    }),
    fields: [
      field('current_password', strings, hostileOthers),
      field('new_password', strings, hostileOthers),
      field('x_unknown', anything),
    ],
  },
  // E-mail (decision 370): the fuzz gateway sends to a local SMTP server. Reset requests name
  // the login user or nobody; confirmations and verifications carry tokens nobody was sent,
  // so no password changes; the owner is verified, so a resend answers 409.
  {
    method: 'POST',
    path: '/auth/password-reset/request',
    auth: 'browser',
    weight: 0.5,
    body: (target, random) => ({
      email: random.chance(0.5) ? target.loginEmail : `fuzz-nobody-${random.alnum(8)}@example.com`,
    }),
    fields: [field('email', strings, hostileOthers), field('x_unknown', anything)],
  },
  {
    method: 'POST',
    path: '/auth/password-reset/confirm',
    auth: 'browser',
    weight: 0.5,
    body: (target, random) => ({
      token: `gw_pwr_${random.alnum(43)}`,
      new_password: random.chance(0.7) ? target.loginPassword : random.alnum(random.int(20)),
    }),
    fields: [
      field('token', strings, hostileOthers),
      field('new_password', strings, hostileOthers),
      field('x_unknown', anything),
    ],
  },
  {
    method: 'POST',
    path: '/auth/verify-email',
    auth: 'browser',
    weight: 0.4,
    body: (_target, random) => ({ token: `gw_ev_${random.alnum(43)}` }),
    fields: [field('token', strings, hostileOthers), field('x_unknown', anything)],
  },
  { method: 'POST', path: '/auth/verify-email/resend', auth: 'session', weight: 0.3 },
  { method: 'GET', path: '/auth/csrf', auth: 'session', weight: 1 },
  { method: 'GET', path: '/auth/session', auth: 'session', weight: 1 },
  { method: 'GET', path: '/models', auth: 'session', weight: 1 },
  { method: 'GET', path: '/dashboard/api/orgs', auth: 'session', weight: 1.5, query: page },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/apps',
    auth: 'session',
    weight: 1.5,
    params: ofOrg,
    query: page,
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/orgs/{org_id}/apps',
    2,
    ofOrg,
    (_target, random) => ({ name: `fuzz app ${random.alnum(4)}` }),
    [field('name', strings, hostileOthers), field('x_unknown', anything)],
  ),
  {
    method: 'GET',
    path: '/dashboard/api/apps/{app_id}/connections',
    auth: 'session',
    weight: 1.5,
    params: ofApp,
    query: page,
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/connections',
    auth: 'session',
    weight: 1.5,
    params: ofOrg,
    query: (target, random) => ({
      limit: String(random.pick([1, 10, 200, 201, 0])),
      ...(random.chance(0.5) && {
        q: random.pick(['fuzz', 'Seed', '%', '_', '\\', '', 'x'.repeat(300), random.alnum(3)]),
      }),
      ...(random.chance(0.3) && { status: random.pick(['active', 'revoked', 'deleted', '']) }),
      ...(random.chance(0.4) && {
        ids: random.pick([
          target.spareConnectionId,
          `${target.spareConnectionId},conn_missing`,
          Array.from({ length: 201 }, (_, i) => `conn_${i}`).join(','),
          ',',
          'conn one',
          '',
        ]),
      }),
    }),
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/apps/{app_id}/connections',
    2,
    ofApp,
    connectionBody,
    connectionFields,
  ),
  dashboardWrite(
    'PATCH',
    '/dashboard/api/connections/{connection_id}',
    2,
    ofConnection,
    connectionBody,
    connectionFields,
  ),
  {
    method: 'DELETE',
    path: '/dashboard/api/connections/{connection_id}',
    auth: 'session',
    weight: 1,
    params: ofConnection,
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/members',
    auth: 'session',
    weight: 1.5,
    params: ofOrg,
    query: page,
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/invitations',
    auth: 'session',
    weight: 1,
    params: ofOrg,
    query: page,
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/orgs/{org_id}/invitations',
    1.5,
    ofOrg,
    (target, random) => ({
      email: random.chance(0.3) ? target.spareMemberEmail : `fuzz-${random.alnum(8)}@example.com`,
      role: random.pick(['viewer', 'member', 'admin', 'owner']),
    }),
    [field('email', strings, hostileOthers), field('role', roles), field('x_unknown', anything)],
  ),
  {
    method: 'POST',
    path: '/dashboard/api/invitations/{invitation_id}/revoke',
    auth: 'session',
    weight: 0.5,
    params: ofInvitation,
  },
  {
    method: 'GET',
    path: '/dashboard/api/user/invitations',
    auth: 'session',
    weight: 1,
    query: page,
  },
  {
    method: 'GET',
    path: '/dashboard/api/user/activity',
    auth: 'session',
    weight: 1,
    query: (_target, random) => ({
      limit: String(1 + random.int(50)),
      ...(random.chance(0.3) && { cursor: String(random.int(1_000_000)) }),
    }),
  },
  {
    method: 'GET',
    path: '/dashboard/api/user/made-recently',
    auth: 'session',
    weight: 1,
    // within the window, before it, in the future, or not a timestamp at all
    query: (_target, random): Record<string, string> =>
      random.chance(0.4)
        ? {}
        : {
            since: random.chance(0.7)
              ? new Date(Date.now() - random.int(400) * 86_400_000 + 60_000).toISOString()
              : random.alnum(12),
          },
  },
  {
    method: 'POST',
    path: '/dashboard/api/user/made-recently/reviewed',
    auth: 'session',
    weight: 0.5,
    // a reset's time (the fuzz account has none: nothing to clear), or not a timestamp
    body: (_target, random) => ({
      password_reset_at: random.chance(0.8)
        ? new Date(Date.now() - random.int(400) * 86_400_000).toISOString()
        : random.alnum(12),
    }),
    fields: [field('password_reset_at', hostileCodes, strings), field('x_unknown', anything)],
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/user/invitations/{invitation_id}/accept',
    0.5,
    ofInboundInvitation,
    // With sign-up on (as the fuzz gateway runs), acceptance needs the invitation's token.
    (target, random) =>
      random.chance(0.5) ? { token: target.inboundInvitationToken } : { token: random.alnum(20) },
    [field('token', strings, anything), field('x_unknown', anything)],
  ),
  {
    method: 'POST',
    path: '/dashboard/api/user/invitations/{invitation_id}/decline',
    auth: 'session',
    weight: 0.5,
    params: ofInboundInvitation,
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/members/{user_id}',
    auth: 'session',
    weight: 1,
    params: ofMember,
  },
  dashboardWrite(
    'PATCH',
    '/dashboard/api/orgs/{org_id}/members/{user_id}',
    1.5,
    ofMember,
    (_target, random) => ({ role: random.pick(['viewer', 'member']) }),
    [field('role', roles), field('x_unknown', anything)],
  ),
  {
    method: 'DELETE',
    path: '/dashboard/api/orgs/{org_id}/members/{user_id}',
    auth: 'session',
    weight: 1,
    params: ofMember,
  },
  {
    method: 'GET',
    path: '/dashboard/api/connections/{connection_id}/api-keys',
    auth: 'session',
    weight: 1,
    params: ofConnection,
    query: page,
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/connections/{connection_id}/api-keys',
    1.5,
    ofConnection,
    (_target, random) => ({
      name: `fuzz key ${random.alnum(4)}`,
      model_policy: [random.pick(['vendor_a/*', 'vendor_b/*', '*'])],
    }),
    [
      field('name', strings, hostileOthers),
      field('model_policy', anything),
      ...rateLimitFields,
      field('x_unknown', anything),
    ],
  ),
  dashboardWrite(
    'PATCH',
    '/dashboard/api/api-keys/{id}',
    1,
    ofApiKey,
    (_target, random) => ({
      requests_per_minute: random.pick([null, 1, 60, 1_000_000]),
      product_user_requests_per_minute: random.pick([null, 1, 10]),
    }),
    [...rateLimitFields, field('x_unknown', anything)],
  ),
  dashboardWrite(
    'POST',
    '/dashboard/api/api-keys/{id}/rotate',
    1,
    ofApiKey,
    (_target, random) => ({ grace_seconds: random.int(100) }),
    [field('grace_seconds', hostileCounts, anything), field('x_unknown', anything)],
  ),
  {
    method: 'POST',
    path: '/dashboard/api/api-keys/{id}/revoke',
    auth: 'session',
    weight: 0.5,
    params: ofApiKey,
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/service-keys',
    auth: 'session',
    weight: 1,
    params: ofOrg,
    query: page,
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/orgs/{org_id}/service-keys',
    1.5,
    ofOrg,
    (_target, random) => ({ scopes: [random.pick(['product_users:read', 'product_users:write'])] }),
    [
      field('scopes', anything),
      field('expires_at', hostileCodes, strings),
      field('x_unknown', anything),
    ],
  ),
  {
    method: 'POST',
    path: '/dashboard/api/service-keys/{id}/revoke',
    auth: 'session',
    weight: 0.5,
    params: ofServiceKey,
  },
  {
    method: 'POST',
    path: '/dashboard/api/service-keys/{id}/disable',
    auth: 'session',
    weight: 0.5,
    params: ofServiceKey,
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/audit-log',
    auth: 'session',
    weight: 1.5,
    params: ofOrg,
    query: (_target, random) => ({
      limit: String(1 + random.int(50)),
      ...(random.chance(0.3) && { cursor: String(random.int(1_000_000)) }),
    }),
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/usage',
    auth: 'session',
    weight: 1.5,
    params: ofOrg,
    query: (_target, random) => ({
      group_by: random.pick(usageGroups),
      ...(random.chance(0.6) && { from: random.pick(usageDays) }),
      ...(random.chance(0.6) && { to: random.pick(usageDays) }),
      ...(random.chance(0.3) && { limit: String(random.int(2000) - 5) }),
    }),
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/product-users',
    auth: 'session',
    weight: 1.5,
    params: ofOrg,
    query: (_target, random) => ({
      limit: '10',
      q: random.pick(['fuzz', '%', '_', '\\', '', 'x'.repeat(300), random.alnum(3)]),
    }),
  },
  {
    method: 'GET',
    path: '/dashboard/api/product-users/{product_end_user_id}',
    auth: 'session',
    weight: 1,
    params: ofProductUser,
  },
  {
    method: 'POST',
    path: '/dashboard/api/product-users/{product_end_user_id}/block',
    auth: 'session',
    weight: 0.5,
    params: ofProductUser,
  },
  {
    method: 'POST',
    path: '/dashboard/api/product-users/{product_end_user_id}/unblock',
    auth: 'session',
    weight: 0.5,
    params: ofProductUser,
  },
  {
    method: 'GET',
    path: '/dashboard/api/product-users/{product_end_user_id}/credit-grants',
    auth: 'session',
    weight: 1,
    params: ofProductUser,
    query: page,
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/product-users/{product_end_user_id}/credit-grants',
    1.5,
    ofProductUser,
    (_target, random) => ({ amount: `0.${random.int(1000)}1` }),
    [
      field('amount', strings, hostileOthers),
      field('currency', strings),
      field('expires_at', strings, hostileOthers),
      field('reason', strings),
      field('x_unknown', anything),
    ],
  ),
  {
    method: 'POST',
    path: '/dashboard/api/credit-grants/{grant_id}/revoke',
    auth: 'session',
    weight: 0.5,
    params: ofGrant,
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/webhooks',
    auth: 'session',
    weight: 1,
    params: ofOrg,
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/orgs/{org_id}/webhooks',
    1.5,
    ofOrg,
    (_target, random) => ({
      url: `https://hooks.example.invalid/${random.alnum(6)}`,
      event_types: [random.pick(['cap.threshold', 'wallet.low_balance'])],
    }),
    webhookFields,
  ),
  dashboardWrite(
    'PATCH',
    '/dashboard/api/orgs/{org_id}/webhooks/{webhook_id}',
    1.5,
    ofWebhook,
    (_target, random) => ({ description: `fuzz ${random.alnum(4)}`, enabled: random.chance(0.8) }),
    [...webhookFields, field('enabled', anything)],
  ),
  {
    method: 'DELETE',
    path: '/dashboard/api/orgs/{org_id}/webhooks/{webhook_id}',
    auth: 'session',
    weight: 0.3,
    params: ofWebhook,
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/orgs/{org_id}/webhooks/{webhook_id}/rotate-secret',
    0.5,
    ofWebhook,
    (_target, random) => ({ grace_seconds: random.int(3600) }),
    [field('grace_seconds', hostileCounts, anything), field('x_unknown', anything)],
  ),
  {
    method: 'POST',
    path: '/dashboard/api/orgs/{org_id}/webhooks/{webhook_id}/test',
    auth: 'session',
    weight: 0.5,
    params: ofWebhook,
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/webhooks/{webhook_id}/deliveries',
    auth: 'session',
    weight: 1,
    params: ofWebhook,
    query: (_target, random) => ({
      limit: String(random.int(250) - 5),
      ...(random.chance(0.3) && { cursor: random.pick(['1', 'x', '99999999999999999999']) }),
      ...(random.chance(0.3) && { status: random.pick(['pending', 'delivered', 'lost']) }),
    }),
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/orgs/{org_id}/webhooks/{webhook_id}/redeliver',
    0.5,
    ofWebhook,
    (_target, random) =>
      random.chance(0.5)
        ? { since: new Date(Date.now() - 60_000).toISOString() }
        : { message_id: `msg_${random.alnum(20)}` },
    [
      field('message_id', strings, hostileOthers),
      field('since', hostileCodes, strings),
      field('x_unknown', anything),
    ],
  ),
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/wallet-alert',
    auth: 'session',
    weight: 0.5,
    params: ofOrg,
  },
  dashboardWrite(
    'PUT',
    '/dashboard/api/orgs/{org_id}/wallet-alert',
    1,
    ofOrg,
    (_target, random) => ({
      low_balance_threshold: random.chance(0.2) ? null : `${random.int(100)}.5`,
    }),
    [field('low_balance_threshold', hostileAmounts, strings, hostileOthers)],
  ),
  {
    method: 'POST',
    path: '/auth/signup',
    auth: 'browser',
    weight: 0.6,
    body: (target, random) => ({
      email: `fuzz-signup-${random.alnum(8)}@example.com`,
      password: random.chance(0.7) ? target.loginPassword : random.alnum(random.int(20)),
    }),
    fields: [
      field('email', strings, hostileOthers),
      field('password', strings, hostileOthers),
      field('x_unknown', anything),
    ],
  },
  {
    method: 'GET',
    path: '/dashboard/api/apps/{app_id}',
    auth: 'session',
    weight: 0.8,
    params: ofSpareApp,
  },
  dashboardWrite(
    'PATCH',
    '/dashboard/api/apps/{app_id}',
    1,
    ofSpareApp,
    (_target, random) => ({ name: `fuzz app ${random.alnum(4)}` }),
    [field('name', strings, hostileOthers), field('x_unknown', anything)],
  ),
  {
    method: 'DELETE',
    path: '/dashboard/api/apps/{app_id}',
    auth: 'session',
    weight: 0.3,
    params: ofSpareApp,
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/overview',
    auth: 'session',
    weight: 1,
    params: ofOrg,
  },
  ...capSpecs(
    '/dashboard/api/orgs/{org_id}/cap',
    ofSpareOrg,
    (_target, random) => ({ amount: amountText(random) }),
    capFields(),
  ),
  ...capSpecs(
    '/dashboard/api/connections/{connection_id}/cap',
    ofConnection,
    (_target, random) => ({
      amount: random.chance(0.3) ? null : amountText(random),
      per_user_amount: amountText(random),
      ...(random.chance(0.5) && { overrun_policy: random.pick(['limit_output', 'reject']) }),
    }),
    capFields(
      field('per_user_amount', hostileAmounts, strings, hostileOthers),
      field('credit_mode', capModes),
      field('overrun_policy', capModes),
      field('requires_product_user', anything),
    ),
  ),
  ...capSpecs(
    '/dashboard/api/product-users/{product_end_user_id}/cap',
    ofProductUser,
    (_target, random) => ({
      amount: amountText(random),
      ...(random.chance(0.5) && { credit_mode: random.pick(['enforce', 'track_only', null]) }),
    }),
    capFields(field('credit_mode', capModes), field('overrun_policy', capModes)),
  ),
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/wallet',
    auth: 'session',
    weight: 0.8,
    params: ofOrg,
  },
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/wallet/transactions',
    auth: 'session',
    weight: 0.8,
    params: ofOrg,
    query: (_target, random) => ({
      limit: String(random.int(250) - 20),
      ...(random.chance(0.4) && {
        cursor: random.pick([
          Buffer.from(`1700000000000000|${random.int(1_000_000)}`).toString('base64url'),
          Buffer.from('1700000000000000|not-a-number').toString('base64url'),
          random.alnum(12),
          '%00',
        ]),
      }),
    }),
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/orgs/{org_id}/wallet/top-ups',
    0.8,
    ofSpareOrg,
    (_target, random) => ({ amount: amountText(random) }),
    capFields(),
  ),
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/credentials',
    auth: 'session',
    weight: 0.8,
    params: ofOrg,
    query: page,
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/orgs/{org_id}/credentials',
    1,
    ofOrg,
    (target, random) => ({
      provider: random.pick(['vendor_a', 'vendor_b']),
      name: `fuzz credential ${random.alnum(4)}`,
      secret: random.chance(0.2) ? `mock-bad-${random.alnum(8)}` : `mock-ok-${random.alnum(16)}`,
      app_connection_ids: [target.spareConnectionId],
    }),
    [
      field('provider', strings, hostileOthers),
      field('name', strings, hostileOthers),
      field('secret', strings, hostileOthers),
      field('model_policy', anything),
      field('priority', hostileCounts, anything),
      field('routing_mode', strings),
      field('app_connection_ids', anything),
      field('x_unknown', anything),
    ],
  ),
  dashboardWrite(
    'PATCH',
    '/dashboard/api/credentials/{credential_id}',
    1,
    ofCredential,
    (_target, random) => ({
      priority: 1 + random.int(5),
      ...(random.chance(0.5) && { status: random.pick(['active', 'disabled']) }),
    }),
    [
      field('name', strings, hostileOthers),
      field('model_policy', anything),
      field('priority', hostileCounts, anything),
      field('routing_mode', strings),
      field('status', strings, hostileOthers),
      field('x_unknown', anything),
    ],
  ),
  {
    method: 'DELETE',
    path: '/dashboard/api/credentials/{credential_id}',
    auth: 'session',
    weight: 0.3,
    params: ofCredential,
  },
  {
    method: 'PUT',
    path: '/dashboard/api/credentials/{credential_id}/grants/{app_connection_id}',
    auth: 'session',
    weight: 0.5,
    params: ofCredentialGrant,
  },
  {
    method: 'DELETE',
    path: '/dashboard/api/credentials/{credential_id}/grants/{app_connection_id}',
    auth: 'session',
    weight: 0.5,
    params: ofCredentialGrant,
  },
];

const oauthParameter = (target: FuzzTarget, random: Random) => ({
  response_type: random.chance(0.9) ? 'code' : 'token',
  client_id: random.chance(0.7) ? target.oauthPublicClientId : target.oauthClientId,
  redirect_uri: random.chance(0.9) ? target.oauthRedirectUri : `${target.oauthRedirectUri}/`,
  state: `fuzz-${random.alnum(8)}`,
  code_challenge: random.alnum(43),
  code_challenge_method: random.chance(0.9) ? 'S256' : 'plain',
});
const authorizeFields = [
  'response_type',
  'client_id',
  'redirect_uri',
  'state',
  'code_challenge',
  'code_challenge_method',
].map((name) => field(name, strings));

/**
 * Host values a parser lets through: without PUBLIC_ORIGIN the OAuth issuer (the metadata's
 * URLs, the `iss` of authorization responses) is the origin the request names.
 */
const hostileHosts = [
  'gw.example.com',
  'GW.Example.COM:443',
  '[::1]:8080',
  'evil.example/path?x=1#frag',
  '"><script>alert(1)</script>',
  'a b',
  `${'h'.repeat(1000)}.example`,
];
const issuerHost = (target: FuzzTarget, random: Random): string =>
  random.chance(0.5) ? target.host : random.pick(hostileHosts);

/**
 * The OAuth routes: the server's metadata, the authorization endpoint (a browser's), token and
 * revocation (an app's).
 */
export const oauthRouteSpecs: readonly RouteSpec[] = [
  {
    method: 'GET',
    path: '/.well-known/oauth-authorization-server',
    auth: 'none',
    weight: 1,
    headers: (target, random) => ({ host: issuerHost(target, random) }),
  },
  {
    method: 'GET',
    path: '/oauth/authorize',
    auth: 'session',
    weight: 3,
    query: oauthParameter,
    headers: (target, random) => ({
      accept: random.chance(0.5) ? 'text/html' : 'application/json',
      ...(random.chance(0.2) && { host: issuerHost(target, random) }),
    }),
  },
  {
    method: 'POST',
    path: '/oauth/authorize',
    auth: 'session',
    weight: 3,
    form: true,
    body: (target, random) => ({
      ...oauthParameter(target, random),
      org_id: random.chance(0.8) ? target.orgId : `org_${random.alnum(20)}`,
      decision: random.pick(['approve', 'deny', 'approve', 'later']),
      csrf_token: target.session.csrfToken,
      // the connection's monthly cap (decision 415): none, or an amount
      ...(random.chance(0.6) && { cap_amount: random.chance(0.2) ? '' : amountText(random) }),
    }),
    headers: (_target, random) => ({ accept: random.chance(0.5) ? 'text/html' : '*/*' }),
    fields: [
      ...authorizeFields,
      field('org_id', strings),
      field('decision', strings),
      field('csrf_token', strings),
      field('cap_amount', hostileAmounts, hostileAmounts, strings),
      field('x_unknown', strings),
    ],
  },
  {
    method: 'POST',
    path: '/oauth/token',
    auth: 'none',
    weight: 4,
    form: true,
    body: (target, random) => ({
      grant_type: random.chance(0.9) ? 'authorization_code' : 'refresh_token',
      code: random.alnum(43),
      redirect_uri: target.oauthRedirectUri,
      code_verifier: random.alnum(64),
      ...(random.chance(0.5)
        ? { client_id: target.oauthPublicClientId }
        : { client_id: target.oauthClientId, client_secret: target.oauthClientSecret }),
    }),
    fields: [
      field('grant_type', strings),
      field('code', strings),
      field('redirect_uri', strings),
      field('code_verifier', strings),
      field('client_id', strings),
      field('client_secret', strings),
      field('x_unknown', strings),
    ],
  },
  {
    method: 'POST',
    path: '/oauth/revoke',
    auth: 'none',
    weight: 3,
    form: true,
    body: (target, random) => ({
      token: random.chance(0.5) ? target.oauthToken : `gw_oauth_${random.alnum(43)}`,
      ...(random.chance(0.5)
        ? { client_id: target.oauthPublicClientId }
        : { client_id: target.oauthClientId, client_secret: target.oauthClientSecret }),
      ...(random.chance(0.2) && { token_type_hint: 'access_token' }),
    }),
    fields: [
      field('token', strings),
      field('token_type_hint', strings),
      field('client_id', strings),
      field('client_secret', strings),
    ],
  },
  {
    method: 'GET',
    path: '/dashboard/api/apps/{app_id}/oauth-clients',
    auth: 'session',
    weight: 1,
    params: ofApp,
    query: page,
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/apps/{app_id}/oauth-clients',
    1.5,
    ofApp,
    (target, random) => ({
      name: `fuzz client ${random.alnum(4)}`,
      redirect_uris: [target.oauthRedirectUri],
      ...(random.chance(0.5) && { public: true }),
    }),
    [
      field('name', strings, hostileOthers),
      field('redirect_uris', anything),
      field('redirect_uris.0', strings, hostileOthers),
      field('public', anything),
      field('x_unknown', anything),
    ],
  ),
  {
    method: 'DELETE',
    path: '/dashboard/api/oauth-clients/{client_id}',
    auth: 'session',
    weight: 0.5,
    params: (target) => ({ client_id: target.spareOAuthClientId }),
  },
  dashboardWrite(
    'POST',
    '/dashboard/api/oauth-clients/{client_id}/rotate-secret',
    0.5,
    (target) => ({ client_id: target.rotatableOAuthClientId }),
    (_target, random) => ({ grace_seconds: random.int(3600) }),
    [field('grace_seconds', hostileCounts, anything), field('x_unknown', anything)],
  ),
  {
    method: 'GET',
    path: '/dashboard/api/orgs/{org_id}/connected-apps',
    auth: 'session',
    weight: 1,
    params: ofOrg,
    query: page,
  },
  // A connected app's monthly cap (decision 415): the connection-cap routes on an OAuth
  // connection of the paying organization.
  ...capSpecs(
    '/dashboard/api/connections/{connection_id}/cap',
    (target) => ({ connection_id: target.spareConnectedAppId }),
    (_target, random) => ({ amount: random.chance(0.2) ? '0' : amountText(random) }),
    capFields(),
  ),
  {
    method: 'POST',
    path: '/dashboard/api/connected-apps/{connection_id}/revoke',
    auth: 'session',
    weight: 0.5,
    params: (target) => ({ connection_id: target.spareConnectedAppId }),
  },
];

/** The dashboard web app's page and asset routes (no caller; static answers). */
export const dashboardUiRouteSpecs: readonly RouteSpec[] = [
  { method: 'GET', path: '/dashboard', auth: 'none', weight: 0.3 },
  { method: 'GET', path: '/dashboard/', auth: 'browser', weight: 0.5 },
  { method: 'GET', path: '/dashboard/models', auth: 'browser', weight: 0.3 },
  { method: 'GET', path: '/dashboard/sign-in', auth: 'browser', weight: 0.3 },
  {
    method: 'GET',
    path: '/dashboard/{page*}',
    auth: 'browser',
    weight: 0.8,
    params: (target) => ({ 'page*': `orgs/${target.orgId}/apps` }),
  },
  {
    method: 'GET',
    path: '/dashboard/assets/{file}',
    auth: 'none',
    weight: 0.5,
    params: () => ({ file: 'app.js' }),
  },
];

/** Hostile values for a path parameter, already in wire form. */
export const hostileParams: readonly { name: string; value: string }[] = [
  { name: 'param-empty', value: '' },
  { name: 'param-percent-nul', value: '%00' },
  { name: 'param-lone-surrogate', value: '%ED%A0%80' },
  { name: 'param-invalid-utf8', value: '%FF%FE' },
  { name: 'param-dot-dot', value: '..' },
  { name: 'param-encoded-slash', value: 'a%2Fb' },
  { name: 'param-long-10k', value: 'p'.repeat(10_000) },
  { name: 'param-unknown-id', value: 'org_000000000000000000000' },
  { name: 'param-sql-ish', value: "x'%20OR%20'1'%3D'1" },
];

/** Paths that are no route, and malformed ways to name the real ones. */
export const unroutedTargets: readonly { name: string; target: string }[] = [
  { name: 'root', target: '/' },
  { name: 'v2-prefix', target: '/v2/chat/completions' },
  { name: 'admin-guess', target: '/admin' },
  { name: 'long-path-10k', target: `/${'a'.repeat(10_000)}` },
  { name: 'percent-nul-path', target: '/%00' },
  { name: 'lone-surrogate-path', target: '/%ED%A0%80' },
  { name: 'dot-dot-to-metrics', target: '/product-users/by-external-id/../../metrics' },
  { name: 'dot-dot-to-healthz', target: '/v1/chat/completions/../../healthz' },
  { name: 'trailing-slash', target: '/v1/chat/completions/' },
  { name: 'double-slash', target: '//v1/chat/completions' },
  { name: 'uppercase', target: '/V1/CHAT/COMPLETIONS' },
  { name: 'encoded-slash', target: '/v1%2Fchat%2Fcompletions' },
  { name: 'matrix-param', target: '/v1/models;x=1' },
  { name: 'asterisk-form', target: '*' },
  { name: 'absolute-form', target: 'http://127.0.0.1/healthz' },
  { name: 'fragment', target: '/healthz#frag' },
  { name: 'query-only', target: '?a=1' },
];
