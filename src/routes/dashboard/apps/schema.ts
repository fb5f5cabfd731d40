// The app object of the dashboard API.
import { z } from 'zod';

export const appSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  created_at: z.string(),
});

/** Routes under /dashboard/api/apps/{app_id} and …/{app_id}/… act on the app's organization. */
export const ofApp = { param: 'app_id', table: 'apps' } as const;

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
