// The API-key object of the dashboard API (a hint, never the key), and where its routes find
// their organization.
import { z } from 'zod';
import { MAX_ROTATION_GRACE_S } from '../../../admin/api-keys.js';
import { MAX_REQUESTS_PER_MINUTE } from '../../../admin/api-key-rate-limits.js';
import { displayName, modelPolicySchema, rotationBody } from '../schemas.js';

export const apiKeySchema = z.object({
  id: z.string(),
  org_id: z.string(),
  app_id: z.string(),
  app_connection_id: z.string(),
  name: z.string().nullable(),
  key_hint: z.string(),
  /** 'oauth_token': the `gw_oauth_…` token of an OAuth connection (docs/oauth.md). */
  kind: z.enum(['api_key', 'oauth_token']),
  status: z.enum(['active', 'revoked', 'expired']),
  model_policy: z.array(z.string()),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
  /** When a rotated key's grace period ends (it works until then). */
  expires_at: z.string().nullable(),
  /** The key a rotation issued in its place. */
  replaced_by: z.string().nullable(),
  /** Requests per minute made with the key (null: no limit; docs/limits.md). */
  requests_per_minute: z.number().int().nullable(),
  /** Requests per minute of each product user attributed through the key (null: no limit). */
  product_user_requests_per_minute: z.number().int().nullable(),
});

/** A request-rate limit as written: an integer 1..1,000,000, or null for none. */
const requestsPerMinute = z
  .number()
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(MAX_REQUESTS_PER_MINUTE, `must be at most ${MAX_REQUESTS_PER_MINUTE}`)
  .nullable();

/** A key as created or rotated: the object and, in this answer only, the raw key. */
export const issuedApiKeySchema = apiKeySchema.extend({ key: z.string() });

/** A new key, and what is odd about its policy (exact model ids the catalogue lacks yet). */
export const createdApiKeySchema = issuedApiKeySchema.extend({ warnings: z.array(z.string()) });

export const createApiKeyBody = z.strictObject({
  name: displayName.optional(),
  model_policy: modelPolicySchema.optional(),
  requests_per_minute: requestsPerMinute.optional(),
  product_user_requests_per_minute: requestsPerMinute.optional(),
});

/** A change of a key's limits: an absent field is kept, null clears it; at least one. */
export const updateApiKeyBody = z
  .strictObject({
    requests_per_minute: requestsPerMinute.optional(),
    product_user_requests_per_minute: requestsPerMinute.optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'name at least one limit to change');

export const rotateApiKeyBody = rotationBody(MAX_ROTATION_GRACE_S, '24 h', 0);

/** Routes under /dashboard/api/api-keys/{id} act on the key's organization. */
export const ofApiKey = { param: 'id', table: 'api_keys' } as const;
