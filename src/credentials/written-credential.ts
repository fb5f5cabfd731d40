// What a write of a provider credential answers, in the dashboard API and `gw credentials`
// alike: the credential, and its warnings — that it is granted to no app connection, so serves
// no request (decision 456), and the exact model ids of the policy just written the catalogue
// does not list yet (stored all the same, decisions 338, 350).
import { modelPolicyWarnings } from '../catalog/model-policy.js';
import type { DbPool } from '../db/pool.js';
import type { CredentialView } from './credential-views.js';

/**
 * The warning of a credential left granted to no connection: it serves no request (decision
 * 456), and what it was added to pay for is still paid from the wallet with gw's own keys.
 * Stable words: the dashboard and scripts may look for them.
 */
export const NO_CONNECTION_WARNING =
  'the credential is granted to no app connection, so it serves no request: until a connection is granted it, requests are served without it (by gw’s own keys, paid from the wallet, unless another credential serves them)';

/**
 * The credential and its warnings: no connection granted, whatever the write changed (the
 * state the write left); and the policy's, only when the write stored one (`policyWritten`:
 * false for a rename, a priority, a status or a grant change — a policy warning is about what
 * was just written).
 */
export async function writtenCredential(
  db: Pick<DbPool, 'query'>,
  credential: CredentialView,
  policyWritten: boolean,
): Promise<CredentialView & { readonly warnings: string[] }> {
  const warnings = [
    ...(credential.status !== 'deleted' && credential.app_connection_ids.length === 0
      ? [NO_CONNECTION_WARNING]
      : []),
    ...(policyWritten ? await modelPolicyWarnings(db, credential.model_policy, 'credential') : []),
  ];
  return { ...credential, warnings };
}
