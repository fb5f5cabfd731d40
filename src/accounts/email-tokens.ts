// Secrets gw sends by e-mail (decision 370): a link to verify an account's address, and one
// to reset its password. Each is 43 base62 characters from the CSPRNG behind a prefix; only its
// SHA-256 is stored (dashboard_email_tokens). A token works once, until it expires, and only
// while its account still has the address it was sent to.
import type { DbPool } from '../db/pool.js';
import { newSecret, secretPrefixes, sha256Hex } from '../ids.js';

export type EmailTokenPurpose = 'verify_email' | 'password_reset';

/** How long each kind of link works. */
export const EMAIL_TOKEN_TTL_MS: Readonly<Record<EmailTokenPurpose, number>> = {
  verify_email: 24 * 3_600_000,
  password_reset: 30 * 60_000,
};

const PREFIXES: Readonly<Record<EmailTokenPurpose, string>> = {
  verify_email: secretPrefixes.emailVerificationToken,
  password_reset: secretPrefixes.passwordResetToken,
};

/** The longest token a body may carry (a prefix and 43 characters; generous). */
export const EMAIL_TOKEN_MAX_LENGTH = 100;

/** A new token of `purpose`, not stored yet (the caller stores its SHA-256). */
export function newEmailToken(purpose: EmailTokenPurpose): string {
  return newSecret(PREFIXES[purpose]);
}

/**
 * A new token for the user's `email`, returned this once. Expired and used tokens (anyone's)
 * are deleted on the way, so the table holds little more than the links still open.
 */
export async function issueEmailToken(
  db: Pick<DbPool, 'query'>,
  userId: string,
  email: string,
  purpose: EmailTokenPurpose,
): Promise<string> {
  await db.query(
    `DELETE FROM dashboard_email_tokens
      WHERE expires_at < now() OR (user_id = $1 AND used_at IS NOT NULL)`,
    [userId],
  );
  const token = newEmailToken(purpose);
  await db.query(
    `INSERT INTO dashboard_email_tokens (token_hash, user_id, purpose, email, expires_at)
     VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond')`,
    [sha256Hex(token), userId, purpose, email, EMAIL_TOKEN_TTL_MS[purpose]],
  );
  return token;
}

export interface RedeemedToken {
  readonly userId: string;
  readonly email: string;
}

/**
 * Marks the token used and names its user, when it is one of `purpose`, unused, unexpired,
 * and its account still has the address it was sent to; else null (nothing changed). One
 * UPDATE: two uses at once cannot both succeed. Run it in the transaction of what it allows.
 */
export async function redeemEmailToken(
  client: Pick<DbPool, 'query'>,
  token: string,
  purpose: EmailTokenPurpose,
): Promise<RedeemedToken | null> {
  const { rows } = await client.query<{ user_id: string; email: string }>(
    `UPDATE dashboard_email_tokens t
        SET used_at = now()
       FROM dashboard_users u
      WHERE t.token_hash = $1 AND t.purpose = $2 AND t.used_at IS NULL
        AND t.expires_at > now() AND u.id = t.user_id AND u.email = t.email
      RETURNING t.user_id, t.email`,
    [sha256Hex(token), purpose],
  );
  const row = rows[0];
  return row ? { userId: row.user_id, email: row.email } : null;
}

/** Voids the user's open tokens of `purpose` (a reset done, an account taken over). */
export async function voidEmailTokens(
  client: Pick<DbPool, 'query'>,
  userId: string,
  purposes: readonly EmailTokenPurpose[],
): Promise<void> {
  await client.query(
    'DELETE FROM dashboard_email_tokens WHERE user_id = $1 AND purpose = ANY($2::text[])',
    [userId, purposes],
  );
}
