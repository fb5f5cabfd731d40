// "Forgot password" (decision 370): a user who cannot sign in asks for a link by e-mail and
// sets a new password with it. Asking answers the same whether or not the address has an
// account (the routes answer 202 either way; the mail is queued with its link, decision 375,
// and goes out after the answer); the link works once, for 30 minutes. Setting the password
// ends every session of the user on every instance (the session epoch,
// src/accounts/user-sessions.ts), voids the user's other reset links, and marks the address
// verified: the link proved the user reads its mail.
import { recordAudit } from '../audit/audit.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import type { AccountMail } from './account-mail.js';
import { redeemEmailToken, voidEmailTokens } from './email-tokens.js';
import { hashPassword, passwordProblem } from './passwords.js';
import type { SessionStore } from './sessions.js';
import { raiseSessionEpoch } from './user-sessions.js';
import { AccountRuleError } from './users.js';

/**
 * Mails a reset link to the account with this (normalized) e-mail, if there is one; else
 * does nothing, in the same time: the same statement runs either way (decision 413).
 */
export function requestPasswordReset(db: DbPool, mail: AccountMail, email: string): Promise<void> {
  return mail.sendPasswordResetTo(db, email);
}

export type PasswordResetOutcome =
  | {
      readonly kind: 'reset';
      readonly userId: string;
      readonly email: string;
      /** How many live sessions of the user ended. */
      readonly sessionsEnded: number;
    }
  /** The token is unknown, used, expired, or its account's address changed: nothing changed. */
  | { readonly kind: 'invalid_token' };

/**
 * Sets the password of the user the reset token names. Throws AccountRuleError (nothing
 * changed, the token still open) when the new password breaks the account rules.
 */
export async function confirmPasswordReset(
  db: DbPool,
  sessions: SessionStore,
  token: string,
  newPassword: string,
): Promise<PasswordResetOutcome> {
  const problem = passwordProblem(newPassword, 'new_password');
  if (problem) throw new AccountRuleError(problem);
  // Hashed before the transaction: scrypt takes tens of milliseconds, no lock need wait on it.
  const hash = await hashPassword(newPassword);
  const reset = await withTransaction(db, async (client) => {
    const redeemed = await redeemEmailToken(client, token, 'password_reset');
    if (!redeemed) return null;
    const epoch = await raiseSessionEpoch(client, redeemed.userId, { hash });
    if (epoch === null) return null;
    const { rows } = await client.query<{ personal_org_id: string }>(
      `UPDATE dashboard_users
          SET email_verified_at = COALESCE(email_verified_at, now()), email_hold_until = NULL,
              -- every browser the account signs in to asks for a review of what it made
              review_after_reset_at = now()
        WHERE id = $1
        RETURNING personal_org_id`,
      [redeemed.userId],
    );
    await voidEmailTokens(client, redeemed.userId, ['password_reset']);
    // In the user's own organization's log (the one every user has), by the user.
    await recordAudit(client, {
      orgId: rows[0]!.personal_org_id,
      userId: redeemed.userId,
      action: 'user.password_reset',
      objectType: 'user',
      objectId: redeemed.userId,
      details: { via: 'email_link' },
    });
    return redeemed;
  });
  if (!reset) return { kind: 'invalid_token' };
  // Step 2 of ending every session (the epoch already refuses them all): Redis cleaned up.
  const ended = await sessions.endAll(reset.userId);
  return { kind: 'reset', ...reset, sessionsEnded: ended.length };
}
