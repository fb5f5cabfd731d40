// Where the invitation routes find their organization, and how invitation rules answer (the
// invitation objects: answers.ts).
import { InvitationError } from '../../../accounts/invitations.js';
import { tooManyAttempts } from '../../../accounts/login-throttle.js';
import { gwError, type GwError } from '../../../errors.js';

/** Invitations of the organization the path names (`{invitation_id}`). */
export const ofInvitation = { param: 'invitation_id', table: 'org_invitations' } as const;

export const invitationErrors = ['gw_not_found', 'gw_conflict', 'gw_role_forbidden'] as const;

/** The spec-shaped answer to a broken invitation rule (other errors are rethrown). */
export function invitationRefusal(error: unknown): GwError {
  if (!(error instanceof InvitationError)) throw error;
  if (error.kind === 'throttled') return tooManyAttempts('invitations', error.retryAfterMs);
  const code = {
    invalid: 'gw_invalid_request',
    not_found: 'gw_not_found',
    conflict: 'gw_conflict',
    forbidden: 'gw_role_forbidden',
  } as const;
  return gwError(code[error.kind], error.message);
}
