// What the sign-in and sign-up routes need: the accounts' database, the session store, the
// throttle, and whether sign-up is on.
import type { LoginThrottle } from '../../accounts/login-throttle.js';
import type { SessionStore } from '../../accounts/sessions.js';
import type { DbPool } from '../../db/pool.js';

export interface AccountDeps {
  readonly accounts: {
    readonly db: DbPool;
    readonly sessions: SessionStore;
    readonly throttle: LoginThrottle;
    /** Self-service sign-up is on (DASHBOARD_SIGNUP). */
    readonly signup: boolean;
  };
}
