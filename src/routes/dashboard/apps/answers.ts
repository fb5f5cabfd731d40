// The app objects of the dashboard API: zod alone, read by the dashboard as types
// (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';

export const appSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  created_at: z.string(),
});

/** One app as its page shows it: status and what hangs off it. */
export const appDetailSchema = appSchema.extend({
  status: z.enum(['active', 'deleted']),
  deleted_at: z.string().nullable(),
  counts: z.object({
    /** Active connections. */
    connections: z.number().int(),
    /** API keys that work now (not revoked, not past a rotation's grace period). */
    api_keys: z.number().int(),
    /** Product users ever seen by the app. */
    product_users: z.number().int(),
  }),
});
