// The provider-credential objects of the dashboard API (its fingerprint, never the secret): zod
// alone, read by the dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';

/** How a credential takes requests (ROUTING_MODES, src/credentials/credential-views.ts). */
export const routingModeSchema = z.enum(['byok_first', 'byok_only']);

export const credentialSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  provider: z.string(),
  secret_kind: z.literal('api_key'),
  name: z.string(),
  model_policy: z.array(z.string()),
  routing_mode: routingModeSchema,
  priority: z.number().int(),
  status: z.enum(['active', 'disabled', 'deleted']),
  /** `sha256:` and 16 hex digits of the secret's hash: tells keys apart, reveals nothing. */
  fingerprint: z.string(),
  /** The connections whose requests it may serve. */
  app_connection_ids: z.array(z.string()),
  created_at: z.string(),
});

/** A credential as created or changed, and what is odd about it (decisions 338, 456). */
export const writtenCredentialSchema = credentialSchema.extend({
  warnings: z
    .array(z.string())
    .describe(
      'sentences, each a thing to fix that did not stop the write: the credential is granted to no app connection, so serves no request (whenever the write leaves it so); an exact model id of the policy written that the catalogue does not list yet (only when the request wrote a policy)',
    ),
});
