// The credit-grant object of the dashboard API and where its routes find it.
import { z } from 'zod';
import { creditsSchema } from '../../schemas.js';

/** Routes under /dashboard/api/credit-grants/{grant_id} act on the grant's organization. */
export const ofCreditGrant = { param: 'grant_id', table: 'credit_grants' } as const;

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
