// The product-user objects of the dashboard API and where their routes find them.
import { z } from 'zod';

/** Routes under /dashboard/api/product-users/{product_end_user_id} act on its organization. */
export const ofProductUser = { param: 'product_end_user_id', table: 'product_users' } as const;

export const productUserSummarySchema = z.object({
  product_end_user_id: z.string(),
  app_id: z.string(),
  external_user_id: z.string(),
  display_name: z.string(),
  status: z.enum(['active', 'blocked']),
  created_at: z.string(),
});
