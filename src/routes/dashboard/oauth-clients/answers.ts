// The OAuth-client objects of the dashboard API: zod and other answers alone, read
// by the dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';

export const oauthClientSchema = z.object({
  client_id: z.string(),
  org_id: z.string(),
  app_id: z.string(),
  name: z.string(),
  /** A public client has no secret (PKCE alone binds its codes). */
  public: z.boolean(),
  client_secret_hint: z.string().nullable(),
  /** Until when each secret retired by a rotation still authenticates, soonest first. */
  retired_secrets_expire_at: z.array(z.string()),
  redirect_uris: z.array(z.string()),
  status: z.enum(['active', 'deleted']),
  created_at: z.string(),
  deleted_at: z.string().nullable(),
});

/** A client as created: for a confidential one, its secret in this answer only. */
export const createdOAuthClientSchema = oauthClientSchema.extend({
  client_secret: z.string().optional(),
});

/** A client whose secret was just rotated: the new secret, in this answer only. */
export const rotatedOAuthClientSchema = oauthClientSchema.extend({ client_secret: z.string() });
