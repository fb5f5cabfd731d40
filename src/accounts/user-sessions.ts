// Ending every session of a dashboard user at once: "sign out everywhere", a password change
// or reset, the operator's `gw admin end-sessions`. Two steps, in this order:
// 1. the user's session epoch is raised in Postgres (one UPDATE): from then on the dashboard's
//    authenticator refuses every session of an earlier epoch, on every instance — including
//    one a sign-in makes while this runs, from the password hash it read before the change;
// 2. the sessions listed under the user in Redis are deleted, so none lingers there until it
//    expires.
// The first step is what makes the cut final; the second keeps Redis clean (and cannot be one
// atomic step: the sessions' keys hash to any slot of a Redis Cluster).
import type { DbPool } from '../db/pool.js';
import type { SessionStore } from './sessions.js';

export interface EndedSessions {
  /** The user's new epoch: a session made for them now must carry it. */
  readonly epoch: number;
  /** The handles of the live sessions that were ended. */
  readonly ended: readonly string[];
}

/** A new password for the user, written with the raised epoch. */
export interface PasswordReplacement {
  readonly hash: string;
  /** Only when the stored hash is still this one (the one the current password matched). */
  readonly replacing?: string;
}

/**
 * Raises the user's session epoch, with a new password hash when given (a password change
 * or reset). Null when no such user exists, or their hash is no longer `replacing`. Step 1
 * alone, for a caller that raises it inside a transaction of its own (a reset by e-mail) and
 * ends the listed sessions (`SessionStore.endAll`) once that committed.
 */
export async function raiseSessionEpoch(
  db: Pick<DbPool, 'query'>,
  userId: string,
  password?: PasswordReplacement,
): Promise<number | null> {
  const { rows } = await db.query<{ session_epoch: number }>(
    `UPDATE dashboard_users
        SET session_epoch = session_epoch + 1,
            password_hash = COALESCE($2, password_hash)
      WHERE id = $1 AND ($3::text IS NULL OR password_hash = $3)
      RETURNING session_epoch`,
    [userId, password?.hash ?? null, password?.replacing ?? null],
  );
  return rows[0]?.session_epoch ?? null;
}

/**
 * Ends every session of the user (see above); with `password`, writes its hash with the raised
 * epoch (a password change or reset). Null when no such user exists, or their hash is no
 * longer `password.replacing` (nothing changed).
 */
export async function endEverySession(
  db: DbPool,
  sessions: SessionStore,
  userId: string,
  password?: PasswordReplacement,
): Promise<EndedSessions | null> {
  const epoch = await raiseSessionEpoch(db, userId, password);
  if (epoch === null) return null;
  return { epoch, ended: await sessions.endAll(userId) };
}
