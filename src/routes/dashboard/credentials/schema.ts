// Where the provider-credential routes find their organization, what they need, and the
// credential service's refusals as the spec's errors (the credential objects, and the answer of
// its writes with its warnings, shared with the CLI: answers.ts).
import { z } from 'zod';
import {
  CREDENTIAL_ERROR_CODES,
  CredentialError,
  type CredentialStore,
  MAX_CREDENTIAL_PRIORITY,
} from '../../../credentials/credential-store.js';
import { ROUTING_MODES } from '../../../credentials/credential-views.js';
import type { DbPool } from '../../../db/pool.js';
import { gwError, type GwError } from '../../../errors.js';
import type { Holds, SameLiterals } from '../../answers.js';
import type { routingModeSchema } from './answers.js';

/** The routing modes answered are the credential service's. */
type _RoutingModesAnswered = Holds<
  SameLiterals<z.output<typeof routingModeSchema>, (typeof ROUTING_MODES)[number]>
>;

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

export const prioritySchema = z
  .number()
  .int('must be a whole number')
  .min(1, 'must be at least 1 (1 is tried first)')
  .max(MAX_CREDENTIAL_PRIORITY, `must be at most ${MAX_CREDENTIAL_PRIORITY}`);

/** A refusal of the credential service as the spec's error (anything else is rethrown). */
export function credentialRefusal(error: unknown): GwError {
  if (error instanceof CredentialError)
    return gwError(CREDENTIAL_ERROR_CODES[error.kind], error.message);
  throw error;
}

export const credentialNotFound = (): GwError =>
  gwError('gw_not_found', 'no credential with this id in your organizations');
