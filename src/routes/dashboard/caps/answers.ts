// The cap objects of the dashboard API: zod and other answers alone, read by the dashboard as
// types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';
import { decimalString } from '../../answers.js';
import { creditModeSchema, overrunPolicySchema } from '../connections/answers.js';

export const capRuleSchema = z.object({
  cap_rule_id: z.string(),
  /** null on a connection cap that sets only the per-user default. */
  amount: decimalString.nullable(),
  per_user_amount: decimalString.nullable(),
  currency: z.string(),
  period: z.literal('monthly'),
  /** A product user's overrides of the connection's settings (null: inherited). */
  credit_mode: creditModeSchema.nullable(),
  overrun_policy: overrunPolicySchema.nullable(),
  status: z.literal('active'),
  updated_at: z.string(),
});

/**
 * The cap that caps a product user: their own, or else the per-user default of the connection
 * they last used (decision 587).
 */
export const effectiveCapSchema = z.object({
  /** `product_user`: their own cap; `app_connection_per_user_default`: the connection's default. */
  source: z.enum(['product_user', 'app_connection_per_user_default']),
  cap_rule_id: z.string(),
  /** The connection whose per-user default caps the user (null: their own cap). */
  app_connection_id: z
    .string()
    .nullable()
    .describe('the connection whose per-user default caps the user; null for their own cap'),
  amount: decimalString,
  currency: z.string(),
  period: z.literal('monthly'),
});

export const capStateSchema = z.object({
  scope: z.enum(['org', 'app_connection', 'product_user']),
  org_id: z.string(),
  app_connection_id: z.string().nullable(),
  product_end_user_id: z.string().nullable(),
  /** The active cap, or null when this level is not capped. */
  cap: capRuleSchema.nullable(),
  /** On a connection: its settings, which govern its product users. */
  connection: z
    .object({
      credit_mode: creditModeSchema,
      overrun_policy: overrunPolicySchema,
      requires_product_user: z.boolean(),
    })
    .optional(),
  /**
   * On a product user: the cap that caps them, their own (`cap`) or else their connection's
   * per-user default; null when nothing caps them. `cap` null alone is not "not capped".
   */
  effective: effectiveCapSchema
    .nullable()
    .optional()
    .describe(
      "product user only: the cap that caps them, their own or else their last connection's per-user default (null: none)",
    ),
});

/** A set cap's answer: the level, and the warnings of a cap already used up (decision 481). */
export const capSetSchema = capStateSchema.extend({ warnings: z.array(z.string()) });
