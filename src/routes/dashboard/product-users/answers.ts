// The product-user objects of the dashboard API: zod alone, read by the
// dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';

export const productUserSummarySchema = z.object({
  product_end_user_id: z.string(),
  app_id: z.string(),
  external_user_id: z.string(),
  display_name: z.string(),
  status: z.enum(['active', 'blocked']),
  created_at: z.string(),
});
