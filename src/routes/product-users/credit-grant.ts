// POST /product-users/by-external-id/credit-grants: grants credits (Idempotency-Key honoured).
import { z } from 'zod';
import type { ServiceKeyIdentity } from '../../auth/service-key-store.js';
import { isGwError } from '../../errors.js';
import type { HttpRequest } from '../../http/types.js';
import { creditGrantRequest, grantOutcome } from '../../product-users/grant-request.js';
import { answer, declareRoute, type RouteResult } from '../framework/declaration.js';
import { creditGrantWithCreditsSchema } from '../answers.js';
import {
  BASE,
  creditGrantSchema,
  findNamedUser,
  identityErrors,
  identityFieldErrors,
  type ProductUserRouteDeps,
} from './lookup.js';

export const creditGrantRoute = declareRoute({
  method: 'POST',
  path: `${BASE}/credit-grants`,
  summary: 'Grants credits to a product user (Idempotency-Key honoured)',
  caller: { kind: 'service_key', scope: 'product_users:write' },
  idempotent: 'handler',
  body: creditGrantSchema,
  bodyFieldErrors: identityFieldErrors,
  responses: {
    200: {
      description: 'an Idempotency-Key replay: the first grant',
      schema: creditGrantWithCreditsSchema,
    },
    201: { description: 'granted', schema: creditGrantWithCreditsSchema },
  },
  errors: [
    ...identityErrors,
    'gw_product_user_not_found',
    'gw_idempotency_key_reused',
    'gw_amount_out_of_range',
    'gw_conflict',
  ],
  handler: ({ request, caller, body }, deps: { productUsers: ProductUserRouteDeps }) =>
    postCreditGrant(deps.productUsers, caller, request, body),
});

async function postCreditGrant(
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  request: HttpRequest,
  body: z.infer<typeof creditGrantSchema>,
): Promise<RouteResult> {
  const user = await findNamedUser(deps, caller, body);
  if (isGwError(user)) return user;
  const grantInput = creditGrantRequest(body, request.headers);
  if (isGwError(grantInput)) return grantInput;
  const granted = await grantOutcome(
    deps.management.grantCredits({ orgId: caller.orgId, productUserId: user.id, ...grantInput }),
  );
  if (isGwError(granted)) return granted;
  const { grant, created } = granted;
  return answer(created ? 201 : 200, await deps.profiles.withCredits(user, grant));
}
