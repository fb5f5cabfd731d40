// The member object of the dashboard API, and how membership rules answer.
import { z } from 'zod';
import { MembershipError } from '../../../accounts/members.js';
import { gwError, type GwError } from '../../../errors.js';
import { roleSchema } from '../answers.js';

export const memberSchema = z.object({
  user_id: z.string(),
  email: z.string(),
  role: roleSchema,
  /** This is the member's personal organization: they always own it (no role change, no removal). */
  personal_organization: z.boolean(),
  created_at: z.string(),
});

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
