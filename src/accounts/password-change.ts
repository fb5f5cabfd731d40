// A dashboard user's password, changed by the user (who proves the current one) or reset by
// the operator (`gw admin set-password`). Either way every session of the user ends, on every
// instance at once (src/accounts/user-sessions.ts), and reset links mailed before are void;
// the caller of a change gets a new one.
import type { DbPool } from '../db/pool.js';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';
import { voidEmailTokens } from './email-tokens.js';
import type { SessionStore } from './sessions.js';
import { endEverySession } from './user-sessions.js';
import { AccountRuleError, findUserByEmail } from './users.js';

export type PasswordChange =
  | { readonly kind: 'changed'; readonly epoch: number; readonly ended: readonly string[] }
  /** The current password given is not the user's: nothing changed. */
  | { readonly kind: 'wrong_current_password' }
  /** The password was changed (or the user removed) while this one was checked. */
  | { readonly kind: 'changed_meanwhile' };

/**
 * Replaces the user's password when `currentPassword` is theirs. Throws AccountRuleError
 * (nothing changed) when the new one breaks the rules.
 */
export async function changePassword(
  db: DbPool,
  sessions: SessionStore,
  userId: string,
  currentPassword: string,
  newPassword: string,
): Promise<PasswordChange> {
  const problem = passwordProblem(newPassword, 'new_password');
  if (problem) throw new AccountRuleError(problem);
  const { rows } = await db.query<{ password_hash: string }>(
    'SELECT password_hash FROM dashboard_users WHERE id = $1',
    [userId],
  );
  const stored = rows[0]?.password_hash;
  if (stored === undefined) return { kind: 'changed_meanwhile' };
  if (!(await verifyPassword(currentPassword, stored))) return { kind: 'wrong_current_password' };
  const hash = await hashPassword(newPassword);
  const ended = await endEverySession(db, sessions, userId, { hash, replacing: stored });
  if (!ended) return { kind: 'changed_meanwhile' };
  // A reset link mailed before (decision 370) would undo the password just chosen.
  await voidEmailTokens(db, userId, ['password_reset']);
  return { kind: 'changed', ...ended };
}

export interface PasswordReset {
  readonly user_id: string;
  readonly email: string;
  /** How many live sessions of the user ended. */
  readonly sessions_ended: number;
}

/**
 * The operator sets the password of the user with this e-mail. Null when there is none;
 * throws AccountRuleError (nothing changed) when the password breaks the rules.
 */
export async function resetPassword(
  db: DbPool,
  sessions: SessionStore,
  email: string,
  password: string,
): Promise<PasswordReset | null> {
  const problem = passwordProblem(password);
  if (problem) throw new AccountRuleError(problem);
  const user = await findUserByEmail(db, email);
  if (!user) return null;
  const ended = await endEverySession(db, sessions, user.user_id, {
    hash: await hashPassword(password),
  });
  if (!ended) return null;
  await voidEmailTokens(db, user.user_id, ['password_reset']);
  return { ...user, sessions_ended: ended.ended.length };
}
