// Proving an account's e-mail address (decision 370), while gw sends mail (SMTP_URL).
//
// A sign-up makes the account unverified and mails its address a link (24 hours). Until the
// link is followed the account may sign in, read what it is shown, change its password and
// sign out, but may change nothing else: no invitation answered, no app connected, no write
// in any organization (src/accounts/dashboard-auth.ts). Such an account holds its address for
// 24 hours; after that a new sign-up with the address takes the account over (new password,
// every session ended, its links void), so nobody can squat an address they cannot read.
// A sign-up with an address whose account is verified (or still holds it) answers exactly as
// one that made an account, and mails the address's owner a notice instead.
import { recordAudit } from '../audit/audit.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import type { AccountMail } from './account-mail.js';
import { redeemEmailToken, voidEmailTokens } from './email-tokens.js';
import { hashPassword, passwordProblem } from './passwords.js';
import type { SessionStore } from './sessions.js';
import { raiseSessionEpoch } from './user-sessions.js';
import { AccountRuleError, createUser, isAccountEmail, normalizeEmail } from './users.js';

/** How long a sign-up holds its address unverified before another may take it over. */
export const EMAIL_HOLD_MS = 24 * 3_600_000;

/** What a sign-up did; the route answers the same for all three. */
export type VerifiedSignup = 'created' | 'taken_over' | 'notified_owner';

/**
 * A sign-up while gw sends mail. Throws AccountRuleError (nothing changed, nothing sent) when
 * the e-mail or password breaks the account rules, which says nothing about other accounts.
 */
export async function signUpWithVerification(
  db: DbPool,
  sessions: SessionStore,
  mail: AccountMail,
  input: { readonly email: string; readonly password: string },
): Promise<VerifiedSignup> {
  const email = normalizeEmail(input.email);
  if (!isAccountEmail(email)) {
    throw new AccountRuleError('email: must be an e-mail address of at most 254 characters');
  }
  const problem = passwordProblem(input.password);
  if (problem) throw new AccountRuleError(problem);
  const { rows } = await db.query<{ lapsed: boolean }>(
    `SELECT (email_verified_at IS NULL AND email_hold_until < now()) AS lapsed
       FROM dashboard_users WHERE email = $1`,
    [email],
  );
  const existing = rows[0];
  let userId: string | null = null;
  if (!existing) {
    try {
      userId = (
        await createUser(db, {
          email,
          password: input.password,
          signup: { holdMs: EMAIL_HOLD_MS },
        })
      ).user_id;
    } catch (error) {
      // Made by another sign-up meanwhile: that one's owner is notified like any other.
      if (!(error instanceof AccountRuleError && error.conflict)) throw error;
    }
  } else if (existing.lapsed) {
    userId = await takeOverLapsedAccount(db, sessions, email, input.password);
  }
  if (userId === null) {
    // The same scrypt work as a sign-up that makes an account: the time tells little.
    await hashPassword(input.password);
    await mail.sendSignupNotice(db, email);
    return 'notified_owner';
  }
  await mail.sendVerification(db, { userId, email });
  return existing ? 'taken_over' : 'created';
}

/**
 * Gives the unverified account whose hold on `email` lapsed to this sign-up: its password
 * replaced, every session of it ended (the session epoch), its open links void, and a new
 * hold. Null when it is no longer such an account (verified or taken meanwhile).
 */
async function takeOverLapsedAccount(
  db: DbPool,
  sessions: SessionStore,
  email: string,
  password: string,
): Promise<string | null> {
  const hash = await hashPassword(password);
  const userId = await withTransaction(db, async (client) => {
    const { rows } = await client.query<{ id: string; personal_org_id: string }>(
      `SELECT id, personal_org_id FROM dashboard_users
        WHERE email = $1 AND email_verified_at IS NULL AND email_hold_until < now()
        FOR UPDATE`,
      [email],
    );
    const account = rows[0];
    if (!account) return null;
    await raiseSessionEpoch(client, account.id, { hash });
    await client.query(
      `UPDATE dashboard_users SET email_hold_until = now() + $2 * interval '1 millisecond'
        WHERE id = $1`,
      [account.id, EMAIL_HOLD_MS],
    );
    await voidEmailTokens(client, account.id, ['verify_email', 'password_reset']);
    await recordAudit(client, {
      orgId: account.personal_org_id,
      userId: account.id,
      action: 'user.signup_takeover',
      objectType: 'user',
      objectId: account.id,
      details: { reason: 'unverified address held past its 24 hours' },
    });
    return account.id;
  });
  if (userId !== null) await sessions.endAll(userId);
  return userId;
}

/**
 * Marks the address of the token's account verified (and ends its hold). Null when the
 * token is unknown, used, expired, or its account's address is no longer the one it was
 * sent to: nothing changed.
 */
export async function verifyEmail(
  db: DbPool,
  token: string,
): Promise<{ readonly userId: string; readonly email: string } | null> {
  return withTransaction(db, async (client) => {
    const redeemed = await redeemEmailToken(client, token, 'verify_email');
    if (!redeemed) return null;
    const { rows } = await client.query<{ personal_org_id: string; was_verified: boolean }>(
      `UPDATE dashboard_users u
          SET email_verified_at = COALESCE(u.email_verified_at, now()), email_hold_until = NULL
         FROM dashboard_users before
        WHERE u.id = $1 AND before.id = u.id
        RETURNING u.personal_org_id, before.email_verified_at IS NOT NULL AS was_verified`,
      [redeemed.userId],
    );
    const row = rows[0]!;
    if (!row.was_verified) {
      await recordAudit(client, {
        orgId: row.personal_org_id,
        userId: redeemed.userId,
        action: 'user.email_verify',
        objectType: 'user',
        objectId: redeemed.userId,
        details: { email: redeemed.email },
      });
    }
    return redeemed;
  });
}

/** Mails the signed-in user's address a new verification link; false when it is verified. */
export async function resendVerification(
  db: DbPool,
  mail: AccountMail,
  user: { readonly id: string; readonly email: string; readonly emailVerified: boolean },
): Promise<boolean> {
  if (user.emailVerified) return false;
  await mail.sendVerification(db, { userId: user.id, email: user.email });
  return true;
}
