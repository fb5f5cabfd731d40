// PUT /dashboard/api/orgs/{org_id}/cap, …/connections/{connection_id}/cap and
// …/product-users/{product_end_user_id}/cap (admin or owner): sets or replaces the level's
// monthly cap (USD, the currency every cost is charged in). Through the same service as
// `gw cap set`, audited; every instance applies it to its next request.
//   org:          {"amount"}
//   connection:   {"amount"?: "…" | null, "per_user_amount"?: "…" | null, "credit_mode"?,
//                  "overrun_policy"?, "requires_product_user"?}  (amount null: only the
//                  per-user default caps; per_user_amount omitted keeps it, null removes it)
//   product user: {"amount"?, "credit_mode"?: … | null, "overrun_policy"?: … | null}
//                 (the user's overrides: omitted keeps them, null inherits the connection's)
// A field left out keeps its value, amount included; a level without a cap needs an amount
// (400 gw_invalid_request, decision 315), and a body that sets nothing is told the fields its
// level takes (400, decisions 594 and 597).
import { z } from 'zod';
import {
  CapNothingToSetError,
  setCapAs,
  type CapInvalidation,
  type CapScope,
  type CapSettings,
} from '../../../admin/caps.js';
import type { DbPool } from '../../../db/pool.js';
import { gwError, isGwError, type GwError } from '../../../errors.js';
import { parseAmountField, SETTLEMENT_CURRENCY } from '../../../money.js';
import { orList } from '../../../validation-messages.js';
import { declareRoute } from '../../framework/declaration.js';
import { amountInput, amountInputOf } from '../schemas.js';
import { capLevels, capRefusal, capTargetOf } from './schema.js';
import { capSetSchema } from './answers.js';

const creditMode = z.enum(['enforce', 'track_only', 'disabled']);
const overrunPolicy = z.enum(['limit_output', 'reject']);

const bodies = {
  // its one field is required: `{}` is told it is all the body takes (decision 597)
  org: z.strictObject({
    amount: amountInputOf(
      'is required, the only field this body takes (DELETE on this path removes the cap)',
    ),
  }),
  app_connection: z.strictObject({
    amount: amountInput.nullable().optional(),
    per_user_amount: amountInput.nullable().optional(),
    credit_mode: creditMode.optional(),
    overrun_policy: overrunPolicy.optional(),
    requires_product_user: z.boolean().optional(),
  }),
  product_user: z.strictObject({
    amount: amountInput.optional(),
    credit_mode: creditMode.nullable().optional(),
    overrun_policy: overrunPolicy.nullable().optional(),
  }),
} as const;

type AnyCapBody = {
  readonly amount?: string | null | undefined;
  readonly per_user_amount?: string | null | undefined;
  readonly credit_mode?: z.infer<typeof creditMode> | null | undefined;
  readonly overrun_policy?: z.infer<typeof overrunPolicy> | null | undefined;
  readonly requires_product_user?: boolean | undefined;
};

/** An amount field in nano-units: a decimal parsed, null (none) and undefined (keep) as sent. */
function amountFieldNano(
  field: string,
  value: string | null | undefined,
): bigint | null | undefined | GwError {
  return typeof value === 'string' ? parseAmountField(field, value) : value;
}

/** The body as the service's settings, or the 400 its amounts earn. */
function capSettings(body: AnyCapBody): CapSettings | GwError {
  const amountNano = amountFieldNano('amount', body.amount);
  if (isGwError(amountNano)) return amountNano;
  const perUserAmountNano = amountFieldNano('per_user_amount', body.per_user_amount);
  if (isGwError(perUserAmountNano)) return perUserAmountNano;
  return {
    ...(amountNano !== undefined && { amountNano }),
    currency: SETTLEMENT_CURRENCY,
    ...(perUserAmountNano !== undefined && { perUserAmountNano }),
    ...(body.credit_mode !== undefined && { creditMode: body.credit_mode }),
    ...(body.overrun_policy !== undefined && { overrunPolicy: body.overrun_policy }),
    ...(body.requires_product_user !== undefined && {
      requiresProductUser: body.requires_product_user,
    }),
  };
}

/**
 * A body that sets nothing (`{}`): the fields this level's body takes, and what removes a cap,
 * as `gw cap set` names its flags (decision 594).
 */
function nothingToSet(scope: CapScope): GwError {
  return gwError(
    'gw_invalid_request',
    `the body sets nothing: give ${orList(Object.keys(bodies[scope].shape))} (DELETE on this path removes the cap)`,
  );
}

function setCapRoute<Scope extends CapScope>(scope: Scope) {
  const level = capLevels[scope];
  return declareRoute({
    method: 'PUT',
    path: level.path,
    summary: `Sets the monthly spending cap of ${level.noun}`,
    caller: { kind: 'org_member', role: 'admin', org: level.locator },
    body: bodies[scope] as z.ZodType<AnyCapBody>,
    responses: {
      200: {
        description:
          'the level with its cap, and its warnings (the cap is not above what the level spent this period)',
        schema: capSetSchema,
      },
    },
    errors: ['gw_amount_out_of_range'],
    async handler(
      { request, caller, body },
      deps: { readonly db: DbPool; readonly caps: CapInvalidation },
    ) {
      const settings = capSettings(body);
      if (isGwError(settings)) return settings;
      try {
        return await setCapAs(
          deps.db,
          deps.caps,
          caller.actor,
          capTargetOf(scope, request.params),
          settings,
        );
      } catch (error) {
        if (error instanceof CapNothingToSetError) return nothingToSet(scope);
        return capRefusal(error);
      }
    },
  });
}

export const setOrgCapRoute = setCapRoute('org');
export const setConnectionCapRoute = setCapRoute('app_connection');
export const setProductUserCapRoute = setCapRoute('product_user');
