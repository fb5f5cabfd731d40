// PUT /product-users/by-external-id: creates or updates a product user (in a deleted app it
// updates one, and creates none: 409).
import { z } from 'zod';
import type { ServiceKeyIdentity } from '../../auth/service-key-store.js';
import { gwError, isGwError } from '../../errors.js';
import { AppDeletedError, ProductUserRuleError } from '../../product-users/management.js';
import {
  emailText,
  MAX_DISPLAY_NAME_CHARS,
  normalizedEmail,
  storableText,
} from '../../product-users/limits.js';
import { answer, declareRoute, type RouteResult } from '../framework/declaration.js';
import { productUserSchema } from '../answers.js';
import {
  BASE,
  identifyUser,
  identityErrors,
  identityFieldErrors,
  timestamp,
  type ProductUserRouteDeps,
} from './lookup.js';

// app_id and external_user_id are checked by identifyUser (their own error codes, also when
// missing or not strings: identityFieldErrors). An e-mail of '' (or spaces) clears it.
export const upsertProductUserSchema = z.strictObject({
  app_id: z.string(),
  external_user_id: z.string(),
  display_name: storableText(MAX_DISPLAY_NAME_CHARS).optional(),
  email: emailText()
    .optional()
    .describe("an e-mail address (trimmed, stored only as its hash); '' removes it"),
  allowance_starts_at: timestamp.nullable().optional(),
});

export const putProductUserRoute = declareRoute({
  method: 'PUT',
  path: BASE,
  summary: 'Creates or updates a product user',
  caller: { kind: 'service_key', scope: 'product_users:write' },
  body: upsertProductUserSchema,
  bodyFieldErrors: identityFieldErrors,
  answerCarriesSecret: true,
  responses: {
    200: { description: 'updated', schema: productUserSchema },
    201: { description: 'created', schema: productUserSchema },
  },
  errors: [...identityErrors, 'gw_conflict'],
  handler: ({ caller, body }, deps: { productUsers: ProductUserRouteDeps }) =>
    putProfile(deps.productUsers, caller, body),
});

async function putProfile(
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  body: z.infer<typeof upsertProductUserSchema>,
): Promise<RouteResult> {
  const pair = await identifyUser(deps, caller, body.app_id, body.external_user_id);
  if (isGwError(pair)) return pair;
  try {
    const { user, created } = await deps.management.upsert({
      orgId: caller.orgId,
      appId: pair.appId,
      externalUserId: pair.externalUserId,
      ...(body.display_name !== undefined && { displayName: body.display_name }),
      ...(body.email !== undefined && { email: normalizedEmail(body.email) || null }),
      ...(body.allowance_starts_at !== undefined && {
        allowanceStartsAt:
          body.allowance_starts_at === null ? null : new Date(body.allowance_starts_at),
      }),
    });
    return answer(created ? 201 : 200, await deps.profiles.profile(user));
  } catch (error) {
    if (error instanceof AppDeletedError) return gwError('gw_conflict', error.message);
    if (error instanceof ProductUserRuleError) {
      return gwError(
        'gw_invalid_request',
        `allowance_starts_at: ${error.message.replace('allowance_starts_at ', '')}`,
      );
    }
    throw error;
  }
}
