// POST /dashboard/api/product-users/{product_end_user_id}/credit-grants (admin or owner):
// grants credits through the same service and checks as the service-key route and the CLI;
// Idempotency-Key honoured. Answers the grant with the user's credits after it.
import { isGwError } from '../../../errors.js';
import { creditGrantRequest, grantOutcome } from '../../../product-users/grant-request.js';
import { productUserById } from '../../../product-users/search.js';
import { answer, declareRoute } from '../../framework/declaration.js';
import { creditGrantSchema, type ProductUserRouteDeps } from '../../product-users/lookup.js';
import { ofProductUser } from '../product-users/schema.js';
import { creditGrantWithCreditsSchema } from './schema.js';

/** The service-key route's grant body, without the user it names (the path names it). */
const grantBody = creditGrantSchema.omit({ app_id: true, external_user_id: true });

export const createCreditGrantRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/product-users/{product_end_user_id}/credit-grants',
  summary: 'Grants credits to a product user (Idempotency-Key honoured)',
  caller: { kind: 'org_member', role: 'admin', org: ofProductUser },
  idempotent: 'handler',
  body: grantBody,
  responses: {
    200: {
      description: 'an Idempotency-Key replay: the first grant',
      schema: creditGrantWithCreditsSchema,
    },
    201: { description: 'granted', schema: creditGrantWithCreditsSchema },
  },
  errors: ['gw_amount_out_of_range', 'gw_idempotency_key_reused', 'gw_conflict'],
  async handler(
    { request, params, caller, body },
    deps: { readonly productUsers: ProductUserRouteDeps },
  ) {
    const { db, management, profiles } = deps.productUsers;
    const grantInput = creditGrantRequest(body, request.headers);
    if (isGwError(grantInput)) return grantInput;
    const user = (await productUserById(db, params.product_end_user_id))!;
    const granted = await grantOutcome(
      management.grantCredits(
        { orgId: user.org_id, productUserId: user.id, ...grantInput },
        { actor: caller.actor, amount: body.amount, expiresAt: body.expires_at ?? null },
      ),
    );
    if (isGwError(granted)) return granted;
    const { grant, created } = granted;
    return answer(created ? 201 : 200, await profiles.withCredits(user, grant));
  },
});
