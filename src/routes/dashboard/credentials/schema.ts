// The provider-credential object of the dashboard API (its fingerprint, never the secret), the
// answer of its writes (with its warnings: no connection granted, and the models of the policy
// written the catalogue lacks — writtenCredential, shared with the CLI), where its routes find
// their organization, and the credential service's refusals as the spec's errors.
import { z } from 'zod';
import {
  CredentialError,
  type CredentialStore,
  MAX_CREDENTIAL_PRIORITY,
} from '../../../credentials/credential-store.js';
import { ROUTING_MODES } from '../../../credentials/credential-views.js';
import type { DbPool } from '../../../db/pool.js';
import { gwError, type ErrorCode, type GwError } from '../../../errors.js';

/** Routes under /dashboard/api/credentials/{credential_id} act on its organization. */
export const ofCredential = { param: 'credential_id', table: 'provider_credentials' } as const;

/** The part of the credential service the dashboard's routes use. */
export interface CredentialRouteDeps {
  readonly credentialStore: Pick<
    CredentialStore,
    'create' | 'get' | 'update' | 'setStatus' | 'grant'
  >;
}

/** What the routes that answer warnings also read: the model catalogue's table. */
export interface CredentialWriteDeps extends CredentialRouteDeps {
  readonly db: Pick<DbPool, 'query'>;
}

export const credentialSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  provider: z.string(),
  secret_kind: z.literal('api_key'),
  name: z.string(),
  model_policy: z.array(z.string()),
  routing_mode: z.enum(ROUTING_MODES),
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

export const prioritySchema = z
  .number()
  .int('must be a whole number')
  .min(1, 'must be at least 1 (1 is tried first)')
  .max(MAX_CREDENTIAL_PRIORITY, `must be at most ${MAX_CREDENTIAL_PRIORITY}`);

const CODES: Readonly<Record<CredentialError['kind'], ErrorCode>> = {
  not_found: 'gw_not_found',
  rejected: 'gw_provider_credential_rejected',
  unreachable: 'gw_provider_credential_unverified',
  not_configured: 'gw_provider_credentials_not_configured',
  invalid: 'gw_invalid_request',
};

/** A refusal of the credential service as the spec's error (anything else is rethrown). */
export function credentialRefusal(error: unknown): GwError {
  if (error instanceof CredentialError) return gwError(CODES[error.kind], error.message);
  throw error;
}

export const credentialNotFound = (): GwError =>
  gwError('gw_not_found', 'no credential with this id in your organizations');
