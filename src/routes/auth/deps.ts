// What the sign-in and sign-up routes need: the accounts' database, the session store, the
// throttle, whether sign-up is on, and gw's e-mail when it sends any.
import type { AccountMail } from '../../accounts/account-mail.js';
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
    /**
     * The messages gw sends (SMTP_URL set), else null: then there is no password reset by
     * e-mail and no address to verify (decision 370).
     */
    readonly mail: AccountMail | null;
  };
}
