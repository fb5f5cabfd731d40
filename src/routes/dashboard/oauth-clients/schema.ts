// The OAuth-client object of the dashboard API (the secret's hint, never the secret), and
// where its routes find their organization.
import { z } from 'zod';
import { MAX_REDIRECT_URI_LENGTH, MAX_REDIRECT_URIS } from '../../../oauth/redirect-uris.js';
import { DEFAULT_ROTATION_GRACE_S, MAX_ROTATION_GRACE_S } from '../../../retiring-secrets.js';
import { displayName, rotationBody } from '../schemas.js';

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

export const rotateOAuthClientSecretBody = rotationBody(
  MAX_ROTATION_GRACE_S,
  '7 days',
  DEFAULT_ROTATION_GRACE_S,
);

export const createOAuthClientBody = z.strictObject({
  name: displayName,
  redirect_uris: z
    .array(
      z
        .string()
        .max(MAX_REDIRECT_URI_LENGTH, `must be at most ${MAX_REDIRECT_URI_LENGTH} characters`),
    )
    .min(1, 'register at least one')
    .max(MAX_REDIRECT_URIS, `at most ${MAX_REDIRECT_URIS} per client`),
  public: z.boolean().optional(),
});

/** Routes under /dashboard/api/oauth-clients/{client_id} act on the client's organization. */
export const ofOAuthClient = { param: 'client_id', table: 'oauth_clients' } as const;
