// Response building blocks shared by several routes' declarations (for /openapi.json).
import { z } from 'zod';

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
    last_app_connection_id: z.string(),
    credits: creditsSchema,
    usage: z.object({ this_month: usageTotalsSchema, total: usageTotalsSchema }),
  })
  .loose();
