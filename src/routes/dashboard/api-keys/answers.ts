// The API-key objects of the dashboard API (a hint, never the key, but once): zod alone, read by the
// dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';

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

/** A key as created or rotated: the object and, in this answer only, the raw key. */
export const issuedApiKeySchema = apiKeySchema.extend({ key: z.string() });

/** A new key, and what is odd about its policy (exact model ids the catalogue lacks yet). */
export const createdApiKeySchema = issuedApiKeySchema.extend({ warnings: z.array(z.string()) });
