// How membership rules answer (the member object: answers.ts).
import { MembershipError } from '../../../accounts/members.js';
import { gwError, type GwError } from '../../../errors.js';

export const membershipErrors = ['gw_not_found', 'gw_conflict', 'gw_role_forbidden'] as const;

/** The spec-shaped answer to a broken membership rule (other errors are rethrown). */
export function membershipRefusal(error: unknown): GwError {
  if (!(error instanceof MembershipError)) throw error;
  const code = {
    not_found: 'gw_not_found',
    conflict: 'gw_conflict',
    forbidden: 'gw_role_forbidden',
  } as const;
  return gwError(code[error.kind], error.message);
}
