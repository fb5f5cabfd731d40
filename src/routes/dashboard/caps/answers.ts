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
});

/** A set cap's answer: the level, and the warnings of a cap already used up (decision 481). */
export const capSetSchema = capStateSchema.extend({ warnings: z.array(z.string()) });
