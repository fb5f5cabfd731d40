// What a write of a provider credential answers, in the dashboard API and `gw credentials`
// alike: the credential, and the warnings of the model policy the write stored (exact model
// ids the catalogue does not list yet: stored all the same, decisions 338, 350).
import { modelPolicyWarnings } from '../catalog/model-policy.js';
import type { DbPool } from '../db/pool.js';
import type { CredentialView } from './credential-views.js';

/**
 * The credential and the warnings of the policy the write stored (`written`: false when it
 * stored none, as a rename, a priority or a status change: a warning is about what was just
 * written).
 */
export async function writtenCredential(
  db: Pick<DbPool, 'query'>,
  credential: CredentialView,
  written: boolean,
): Promise<CredentialView & { readonly warnings: string[] }> {
  const warnings = written
    ? await modelPolicyWarnings(db, credential.model_policy, 'credential')
    : [];
  return { ...credential, warnings };
}
