// The review a password reset by e-mailed link asks for (decision 513): the reset marks the
// account (src/accounts/password-reset-by-email.ts), every browser it signs in to shows a banner
// leading to "made by your account recently" (src/accounts/made-by-account.ts), and reading
// that list or dismissing the banner clears the mark — of that reset, not of a newer one.
import type { DbPool } from '../db/pool.js';

/**
 * Clears `userId`'s review mark if it is of a reset at or before `resetAt` (the one the browser
 * showed; a reset since then keeps asking). Answers the mark that remains, null when none.
 */
export async function markResetReviewed(
  db: DbPool,
  userId: string,
  resetAt: Date,
): Promise<Date | null> {
  // The browser holds the time to the millisecond; Postgres to the microsecond.
  const { rows } = await db.query<{ review_after_reset_at: Date | null }>(
    `UPDATE dashboard_users
        SET review_after_reset_at = CASE
              WHEN date_trunc('milliseconds', review_after_reset_at) <= $2 THEN NULL
              ELSE review_after_reset_at END
      WHERE id = $1
      RETURNING review_after_reset_at`,
    [userId, resetAt],
  );
  return rows[0]?.review_after_reset_at ?? null;
}
