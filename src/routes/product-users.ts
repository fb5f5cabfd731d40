// The service-key management routes for product users (unprefixed; no /api/v1):
//   GET  /product-users/by-external-id                   read (never creates)
//   PUT  /product-users/by-external-id                   upsert
//   GET  /product-users/by-external-id/credit-summary    the credits object
//   POST /product-users/by-external-id/credit-grants     grant credits (Idempotency-Key)
import { z } from 'zod';
import type { ServiceKeyIdentity } from '../auth/service-key-store.js';
import type { DbPool } from '../db/pool.js';
import { gwError, isGwError, type GwError } from '../errors.js';
import { sendError, sendJson } from '../http/respond.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { creditGrantRequest, grantOutcome } from '../product-users/grant-request.js';
import { ProductUserRuleError, type ProductUserManagement } from '../product-users/management.js';
import {
  DEFAULT_CURRENCY,
  type ProductUserProfiles,
  type ProductUserRow,
} from '../product-users/profile.js';
import {
  boundedTextProblem,
  MAX_APP_ID_CHARS,
  MAX_DISPLAY_NAME_CHARS,
  MAX_EMAIL_CHARS,
  MAX_EXTERNAL_USER_ID_CHARS,
  MAX_GRANT_REASON_CHARS,
  storableText,
} from '../product-users/limits.js';
import { declareRoute } from './declaration.js';
import { creditsSchema, productUserSchema } from './schemas.js';

export interface ProductUserRouteDeps {
  readonly db: DbPool;
  readonly profiles: ProductUserProfiles;
  readonly management: ProductUserManagement;
}

const BASE = '/product-users/by-external-id';
const currencyCode = z.string().regex(/^[A-Z]{3}$/, 'must be a 3-letter ISO currency code');
const timestamp = z.iso.datetime({ offset: true });

// app_id and external_user_id are checked by identifyUser (their own error codes).
export const upsertProductUserSchema = z.strictObject({
  app_id: z.string(),
  external_user_id: z.string(),
  display_name: storableText(MAX_DISPLAY_NAME_CHARS).optional(),
  email: z.email().max(MAX_EMAIL_CHARS).optional(),
  allowance_starts_at: timestamp.nullable().optional(),
});

export const creditGrantSchema = z.strictObject({
  app_id: z.string(),
  external_user_id: z.string(),
  amount: z.string(),
  currency: currencyCode.optional(),
  expires_at: timestamp.nullable().optional(),
  reason: storableText(MAX_GRANT_REASON_CHARS).optional(),
});

const byExternalIdQuery = z.object({ app_id: z.string(), external_user_id: z.string() });
const identityErrors = ['gw_invalid_app_id', 'gw_invalid_external_user_id'] as const;

export const getProductUserRoute = declareRoute({
  method: 'GET',
  path: BASE,
  summary: "A product user's profile: allowance, cap, credits, usage (never creates one)",
  caller: { kind: 'service_key', scope: 'product_users:read' },
  query: byExternalIdQuery,
  responses: { 200: { description: 'the product user', schema: productUserSchema } },
  errors: [...identityErrors, 'gw_product_user_not_found'],
  async handler({ request, caller }, response, deps: { productUsers: ProductUserRouteDeps }) {
    const user = await findFromQuery(deps.productUsers, caller, new URLSearchParams(request.query));
    if (isGwError(user)) return sendError(response, user);
    sendJson(response, 200, await deps.productUsers.profiles.profile(user));
  },
});

export const putProductUserRoute = declareRoute({
  method: 'PUT',
  path: BASE,
  summary: 'Creates or updates a product user',
  caller: { kind: 'service_key', scope: 'product_users:write' },
  body: upsertProductUserSchema,
  responses: {
    200: { description: 'updated', schema: productUserSchema },
    201: { description: 'created', schema: productUserSchema },
  },
  errors: [...identityErrors],
  handler: ({ caller, body }, response, deps: { productUsers: ProductUserRouteDeps }) =>
    putProfile(deps.productUsers, caller, body, response),
});

export const creditSummaryRoute = declareRoute({
  method: 'GET',
  path: `${BASE}/credit-summary`,
  summary: "A product user's credits in one currency (default USD)",
  caller: { kind: 'service_key', scope: 'product_users:read' },
  query: byExternalIdQuery.extend({ currency: z.string().optional() }),
  responses: { 200: { description: 'credits', schema: creditsSchema } },
  errors: [...identityErrors, 'gw_invalid_request', 'gw_product_user_not_found'],
  handler: ({ request, caller }, response, deps: { productUsers: ProductUserRouteDeps }) =>
    getCreditSummary(deps.productUsers, caller, request, response),
});

export const creditGrantRoute = declareRoute({
  method: 'POST',
  path: `${BASE}/credit-grants`,
  summary: 'Grants credits to a product user (Idempotency-Key honoured)',
  caller: { kind: 'service_key', scope: 'product_users:write' },
  body: creditGrantSchema,
  responses: {
    200: { description: 'an Idempotency-Key replay: the first grant' },
    201: { description: 'granted' },
  },
  errors: [
    ...identityErrors,
    'gw_product_user_not_found',
    'gw_idempotency_key_reused',
    'gw_amount_out_of_range',
  ],
  handler: ({ request, caller, body }, response, deps: { productUsers: ProductUserRouteDeps }) =>
    postCreditGrant(deps.productUsers, caller, request, body, response),
});

/** Checks the (app_id, external_user_id) pair: present, and the app belongs to the caller's org. */
async function identifyUser(
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  appId: string | null | undefined,
  externalUserId: string | null | undefined,
): Promise<{ appId: string; externalUserId: string } | GwError> {
  if (!appId || appId.trim() === '') return gwError('gw_invalid_app_id', 'app_id is required');
  const appIdProblem = boundedTextProblem(appId, MAX_APP_ID_CHARS);
  if (appIdProblem) return gwError('gw_invalid_app_id', `app_id: ${appIdProblem}`);
  if (!externalUserId || externalUserId.trim() === '') {
    return gwError('gw_invalid_external_user_id', 'external_user_id is required');
  }
  const idProblem = boundedTextProblem(externalUserId, MAX_EXTERNAL_USER_ID_CHARS);
  if (idProblem) {
    return gwError('gw_invalid_external_user_id', `external_user_id: ${idProblem}`);
  }
  const { rowCount } = await deps.db.query('SELECT 1 FROM apps WHERE id = $1 AND org_id = $2', [
    appId,
    caller.orgId,
  ]);
  if (rowCount === 0)
    return gwError('gw_invalid_app_id', 'no app with this app_id in your organization');
  return { appId, externalUserId };
}

async function findFromQuery(
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  query: URLSearchParams,
): Promise<ProductUserRow | GwError> {
  const pair = await identifyUser(deps, caller, query.get('app_id'), query.get('external_user_id'));
  if (isGwError(pair)) return pair;
  const user = await deps.profiles.findUser(caller.orgId, pair.appId, pair.externalUserId);
  return (
    user ??
    gwError('gw_product_user_not_found', 'no product user with this app_id and external_user_id')
  );
}

async function getCreditSummary(
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  request: HttpRequest,
  response: HttpResponse,
): Promise<void> {
  const query = new URLSearchParams(request.query);
  const currency = query.get('currency') ?? DEFAULT_CURRENCY;
  if (!currencyCode.safeParse(currency).success) {
    return sendError(
      response,
      gwError('gw_invalid_request', 'currency: must be a 3-letter ISO currency code'),
    );
  }
  const user = await findFromQuery(deps, caller, query);
  if (isGwError(user)) return sendError(response, user);
  sendJson(response, 200, await deps.profiles.credits(user, currency));
}

async function putProfile(
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  body: z.infer<typeof upsertProductUserSchema>,
  response: HttpResponse,
): Promise<void> {
  const pair = await identifyUser(deps, caller, body.app_id, body.external_user_id);
  if (isGwError(pair)) return sendError(response, pair);
  try {
    const { user, created } = await deps.management.upsert({
      orgId: caller.orgId,
      appId: pair.appId,
      externalUserId: pair.externalUserId,
      ...(body.display_name !== undefined && { displayName: body.display_name }),
      ...(body.email !== undefined && { email: body.email }),
      ...(body.allowance_starts_at !== undefined && {
        allowanceStartsAt:
          body.allowance_starts_at === null ? null : new Date(body.allowance_starts_at),
      }),
    });
    sendJson(response, created ? 201 : 200, await deps.profiles.profile(user));
  } catch (error) {
    if (error instanceof ProductUserRuleError) {
      return sendError(
        response,
        gwError(
          'gw_invalid_request',
          `allowance_starts_at: ${error.message.replace('allowance_starts_at ', '')}`,
        ),
      );
    }
    throw error;
  }
}

async function postCreditGrant(
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  request: HttpRequest,
  body: z.infer<typeof creditGrantSchema>,
  response: HttpResponse,
): Promise<void> {
  const user = await findFromQuery(
    deps,
    caller,
    new URLSearchParams({ app_id: body.app_id, external_user_id: body.external_user_id }),
  );
  if (isGwError(user)) return sendError(response, user);
  const grantInput = creditGrantRequest(body, request.headers['idempotency-key']);
  if (isGwError(grantInput)) return sendError(response, grantInput);
  const granted = await grantOutcome(
    deps.management.grantCredits({ orgId: caller.orgId, productUserId: user.id, ...grantInput }),
  );
  if (isGwError(granted)) return sendError(response, granted);
  const { grant, created } = granted;
  const credits = await deps.profiles.credits(user, grant.currency);
  sendJson(response, created ? 201 : 200, { ...grant, credits });
}
