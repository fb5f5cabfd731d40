// What the OAuth-client routes take, and where they find their organization (the OAuth-client
// objects, with the secret's hint, never the secret but once: answers.ts).
import { z } from 'zod';
import { MAX_REDIRECT_URI_LENGTH, MAX_REDIRECT_URIS } from '../../../oauth/redirect-uris.js';
import { DEFAULT_ROTATION_GRACE_S, MAX_ROTATION_GRACE_S } from '../../../retiring-secrets.js';
import { displayName, rotationBody } from '../schemas.js';

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
