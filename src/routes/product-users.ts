// The service-key management routes for product users (unprefixed; no /api/v1):
//   GET  /product-users/by-external-id                   read (never creates)
//   PUT  /product-users/by-external-id                   upsert
//   GET  /product-users/by-external-id/credit-summary    the credits object
//   POST /product-users/by-external-id/credit-grants     grant credits (Idempotency-Key)
import { z } from 'zod';
import type {
  ServiceKeyIdentity,
  ServiceKeyScope,
  ServiceKeyStore,
} from '../auth/service-key-store.js';
import type { DbPool } from '../db/pool.js';
import { gwError, isGwError, type GwError } from '../errors.js';
import { sendError, sendJson } from '../http/respond.js';
import type { HttpRequest, HttpResponse, Route } from '../http/types.js';
import { parseJsonBody } from '../inference/parse-body.js';
import { AmountError, parseAmountToNano } from '../money.js';
import { ProductUserRuleError, type ProductUserManagement } from '../product-users/management.js';
import {
  DEFAULT_CURRENCY,
  type ProductUserProfiles,
  type ProductUserRow,
} from '../product-users/profile.js';

export interface ProductUserRouteDeps {
  readonly db: DbPool;
  readonly serviceKeys: ServiceKeyStore;
  readonly profiles: ProductUserProfiles;
  readonly management: ProductUserManagement;
}

const BASE = '/product-users/by-external-id';
const currencyCode = z.string().regex(/^[A-Z]{3}$/, 'must be a 3-letter ISO currency code');
const timestamp = z.iso.datetime({ offset: true });

export const upsertProductUserSchema = z.strictObject({
  app_id: z.string(),
  external_user_id: z.string(),
  display_name: z.string().max(256).optional(),
  email: z.email().optional(),
  allowance_starts_at: timestamp.nullable().optional(),
});

export const creditGrantSchema = z.strictObject({
  app_id: z.string(),
  external_user_id: z.string(),
  amount: z.string(),
  currency: currencyCode.optional(),
  expires_at: timestamp.nullable().optional(),
  reason: z.string().max(500).optional(),
});

type Handler = (
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  request: HttpRequest,
  response: HttpResponse,
) => Promise<void>;

function guarded(deps: ProductUserRouteDeps, scope: ServiceKeyScope, handler: Handler) {
  return async (request: HttpRequest, response: HttpResponse): Promise<void> => {
    const caller = await deps.serviceKeys.authenticate(request.headers, scope);
    if (isGwError(caller)) return sendError(response, caller);
    await handler(deps, caller, request, response);
  };
}

export function productUserRoutes(deps: ProductUserRouteDeps): Route[] {
  return [
    { method: 'GET', path: BASE, handler: guarded(deps, 'product_users:read', getProfile) },
    { method: 'PUT', path: BASE, handler: guarded(deps, 'product_users:write', putProfile) },
    {
      method: 'GET',
      path: `${BASE}/credit-summary`,
      handler: guarded(deps, 'product_users:read', getCreditSummary),
    },
    {
      method: 'POST',
      path: `${BASE}/credit-grants`,
      handler: guarded(deps, 'product_users:write', postCreditGrant),
    },
  ];
}

/** Checks the (app_id, external_user_id) pair: present, and the app belongs to the caller's org. */
async function identifyUser(
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  appId: string | null | undefined,
  externalUserId: string | null | undefined,
): Promise<{ appId: string; externalUserId: string } | GwError> {
  if (!appId || appId.trim() === '') return gwError('gw_invalid_app_id', 'app_id is required');
  if (!externalUserId || externalUserId.trim() === '') {
    return gwError('gw_invalid_external_user_id', 'external_user_id is required');
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

const getProfile: Handler = async (deps, caller, request, response) => {
  const user = await findFromQuery(deps, caller, new URLSearchParams(request.query));
  if (isGwError(user)) return sendError(response, user);
  sendJson(response, 200, await deps.profiles.profile(user));
};

const getCreditSummary: Handler = async (deps, caller, request, response) => {
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
};

const putProfile: Handler = async (deps, caller, request, response) => {
  const body = parseJsonBody(request.body, upsertProductUserSchema);
  if (isGwError(body)) return sendError(response, body);
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
};

const postCreditGrant: Handler = async (deps, caller, request, response) => {
  const body = parseJsonBody(request.body, creditGrantSchema);
  if (isGwError(body)) return sendError(response, body);
  const user = await findFromQuery(
    deps,
    caller,
    new URLSearchParams({ app_id: body.app_id, external_user_id: body.external_user_id }),
  );
  if (isGwError(user)) return sendError(response, user);
  let amountNano: bigint;
  try {
    amountNano = parseAmountToNano(body.amount);
  } catch (error) {
    if (error instanceof AmountError)
      return sendError(response, gwError('gw_invalid_request', `amount: ${error.message}`));
    throw error;
  }
  if (amountNano <= 0n)
    return sendError(response, gwError('gw_invalid_request', 'amount: must be greater than zero'));
  const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    return sendError(response, gwError('gw_invalid_request', 'expires_at: must be in the future'));
  }
  const idempotencyKey = request.headers['idempotency-key'];
  if (
    idempotencyKey !== undefined &&
    (idempotencyKey.length === 0 || idempotencyKey.length > 255)
  ) {
    return sendError(
      response,
      gwError('gw_invalid_request', 'Idempotency-Key: must be 1 to 255 characters'),
    );
  }
  const { grant, created } = await deps.management.grantCredits({
    orgId: caller.orgId,
    productUserId: user.id,
    amountNano,
    currency: body.currency ?? DEFAULT_CURRENCY,
    expiresAt,
    reason: body.reason ?? null,
    idempotencyKey: idempotencyKey ?? null,
  });
  const credits = await deps.profiles.credits(user, grant.currency);
  sendJson(response, created ? 201 : 200, { ...grant, credits });
};
