// The settings of an app connection as the dashboard API takes them, and where its routes find
// their organization (the connection objects: answers.ts).
import { z } from 'zod';
import { displayName } from '../schemas.js';
import { creditModeSchema, overrunPolicySchema } from './answers.js';

export const connectionSettingsSchema = z.strictObject({
  name: displayName.optional(),
  requires_product_user: z.boolean().optional(),
  credit_mode: creditModeSchema.optional(),
  overrun_policy: overrunPolicySchema.optional(),
});

/** Routes under /dashboard/api/apps/{app_id}/… act on that app's organization. */
export { ofApp } from '../apps/schema.js';
/** Routes under /dashboard/api/connections/{connection_id} act on its organization. */
export const ofConnection = { param: 'connection_id', table: 'app_connections' } as const;
