// The service-key objects of the dashboard API (a hint, never the key but once): zod alone,
// read by the dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';

/** What a service key may do (SERVICE_KEY_SCOPES, src/admin/provisioning.ts). */
export const serviceKeyScopeSchema = z.enum(['product_users:read', 'product_users:write']);

export const serviceKeySchema = z.object({
  id: z.string(),
  org_id: z.string(),
  key_hint: z.string(),
  scopes: z.array(serviceKeyScopeSchema),
  status: z.enum(['active', 'revoked', 'disabled', 'expired']),
  expires_at: z.string().nullable(),
  created_at: z.string(),
});

/** A key as created: the object and, in this answer only, the raw key. */
export const issuedServiceKeySchema = serviceKeySchema.extend({ key: z.string() });
