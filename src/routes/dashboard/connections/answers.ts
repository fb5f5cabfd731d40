// The app-connection objects of the dashboard API: zod alone, read by the
// dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';

/** How a connection's requests are paid and bounded (docs/product-users.md). */
export const creditModeSchema = z.enum(['enforce', 'track_only', 'disabled']);
export const overrunPolicySchema = z.enum(['limit_output', 'reject']);

export const connectionSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  app_id: z.string(),
  name: z.string(),
  status: z.enum(['active', 'revoked']),
  requires_product_user: z.boolean(),
  credit_mode: creditModeSchema,
  overrun_policy: overrunPolicySchema,
  /** Set on a connection another organization made by OAuth consent (docs/oauth.md). */
  oauth_client_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** A connection as the organization-wide list shows it: with its app's name. */
export const orgConnectionSchema = connectionSchema.extend({ app_name: z.string() });
