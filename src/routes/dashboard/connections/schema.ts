// The app-connection object of the dashboard API and its settings.
import { z } from 'zod';
import { displayName } from '../schemas.js';

export const connectionSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  app_id: z.string(),
  name: z.string(),
  status: z.enum(['active', 'revoked']),
  requires_product_user: z.boolean(),
  credit_mode: z.enum(['enforce', 'track_only', 'disabled']),
  overrun_policy: z.enum(['limit_output', 'reject']),
  /** Set on a connection another organization made by OAuth consent (docs/oauth.md). */
  oauth_client_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const connectionSettingsSchema = z.strictObject({
  name: displayName.optional(),
  requires_product_user: z.boolean().optional(),
  credit_mode: z.enum(['enforce', 'track_only', 'disabled']).optional(),
  overrun_policy: z.enum(['limit_output', 'reject']).optional(),
});

/** Routes under /dashboard/api/apps/{app_id}/… act on that app's organization. */
export { ofApp } from '../apps/schema.js';
/** Routes under /dashboard/api/connections/{connection_id} act on its organization. */
export const ofConnection = { param: 'connection_id', table: 'app_connections' } as const;

/** A connection as the organization-wide list shows it: with its app's name. */
export const orgConnectionSchema = connectionSchema.extend({ app_name: z.string() });
