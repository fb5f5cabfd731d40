// Answer building blocks shared by several routes' declarations (for /openapi.json). Read by the
// dashboard too, as types only (web/dashboard/src/types.ts): this module imports zod alone
// (test/dashboard-types.test.ts).
import { z } from 'zod';

/**
 * `Holds<SameLiterals<A, B>>` compiles only when an answer's literals are the domain's own list
 * (which an answers module cannot import): written where both are in reach, a value added to one
 * alone fails the typecheck there.
 */
export type SameLiterals<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export type Holds<Claim extends true> = Claim;

export const decimalString = z
  .string()
  .regex(/^-?\d+\.\d{12}$/)
  .describe('decimal with 12 fractional digits');

export const usageTotalsSchema = z.object({
  sell_cost: decimalString,
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
  request_count: z.number().int(),
});

export const creditsSchema = z.object({
  currency: z.string(),
  available_credits: decimalString,
  active_grant_count: z.number().int(),
  expiring_soon_amount: decimalString,
  spent_this_month: decimalString,
  spent_total: decimalString,
  last_grant_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
});

/** A credit grant (the service-key and dashboard routes answer the same object). */
export const creditGrantSchema = z.object({
  grant_id: z.string(),
  product_end_user_id: z.string(),
  amount: z.string(),
  currency: z.string(),
  expires_at: z.string().nullable(),
  reason: z.string().nullable(),
  status: z.enum(['active', 'revoked']),
  created_at: z.string(),
});

/** A grant with the user's credits after the change (what the profile now shows). */
export const creditGrantWithCreditsSchema = creditGrantSchema.extend({ credits: creditsSchema });

const timestampString = z.string().describe('RFC 3339 UTC timestamp');

/** How the profile's allowance was resolved and what is left of it (SPEC: allowance object). */
export const allowanceSchema = z.object({
  app_connection_id: z
    .string()
    .describe("connection used to resolve the allowance; '' for a user's own cap before any call"),
  cap_source: z.string().describe('product_end_user'),
  cap_rule_id: z.string(),
  credit_mode: z.enum(['enforce', 'track_only', 'disabled']),
  overrun_policy: z.string().describe('limit_output, or another policy of the connection'),
  currency: z.string(),
  period: z.string().describe('monthly'),
  period_start: timestampString,
  period_end: timestampString,
  cap_amount: decimalString,
  spent_this_period: decimalString,
  remaining_base_allowance: decimalString,
  available_credits: decimalString,
  available_allowance: decimalString,
});

/** The active cap behind the allowance (SPEC: cap object). */
export const capSchema = z.object({
  source: z.string().describe('product_end_user'),
  cap_rule_id: z.string(),
  amount: decimalString,
  currency: z.string(),
  period: z.string().describe('monthly'),
  spent_this_period: decimalString,
  reset_at: timestampString,
  status: z.string().describe('active'),
  updated_at: timestampString,
});

export const productUserSchema = z
  .object({
    product_end_user_id: z.string(),
    org_id: z.string(),
    app_id: z.string(),
    external_user_id: z.string(),
    display_name: z.string(),
    email_hash: z.string(),
    status: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    allowance_starts_at: z.string().nullable(),
    last_app_connection_id: z
      .string()
      .describe("the last connection the user called through; '' before any call"),
    allowance: allowanceSchema.optional().describe('present when a cap applies to the user'),
    cap: capSchema.nullable().describe('null when no cap applies to the user'),
    credits: creditsSchema,
    usage: z.object({ this_month: usageTotalsSchema, total: usageTotalsSchema }),
  })
  .loose();
