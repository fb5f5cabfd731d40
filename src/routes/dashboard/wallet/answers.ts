// The wallet objects of the dashboard API: zod and other answers alone, read by the dashboard as
// types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';
import { decimalString } from '../../answers.js';

export const walletSchema = z.object({
  org_id: z.string(),
  balance: decimalString,
  /** Held by requests in flight. */
  reserved: decimalString,
  /** balance − reserved: what new requests may hold. */
  available: decimalString,
  currency: z.string(),
});

/** The wallet as its page reads it: and whether this gateway takes top-ups from the dashboard. */
export const walletReadSchema = walletSchema.extend({ top_ups_enabled: z.boolean() });

export const walletTransactionSchema = z.object({
  id: z.string(),
  /**
   * `topup`: funds added; `set`: the difference a balance set (`gw wallet set`) made;
   * `usage_archived`: what usage pruned from the ledger (`gw usage prune`) had taken.
   */
  kind: z.enum(['topup', 'set', 'usage_archived']),
  /** Signed. */
  amount: decimalString,
  currency: z.string(),
  /** The dashboard user who made it, `cli`, or null (the seed, older entries). */
  created_by: z.string().nullable(),
  created_at: z.string(),
});
