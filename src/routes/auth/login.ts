// POST /auth/login: signs a dashboard user in with e-mail and password. One generic error for
// a wrong e-mail or password; failures are throttled per account and per client address.
// Every sign-in gets a new session id (and ends the session the browser presented, if any).
import { tooManyAttempts } from '../../accounts/login-throttle.js';
import { decoyPasswordHash, verifyPassword } from '../../accounts/passwords.js';
import { findLoginCandidate, loadDashboardUser, normalizeEmail } from '../../accounts/users.js';
import { gwError } from '../../errors.js';
import { declareRoute } from '../framework/declaration.js';
import type { AccountDeps } from './deps.js';
import { answerSignedIn, emailPasswordSchema } from './signed-in.js';
import { signedInSchema } from './answers.js';

const INVALID_CREDENTIALS = 'wrong e-mail or password';

export const loginRoute = declareRoute({
  method: 'POST',
  path: '/auth/login',
  summary: 'Signs in to the dashboard: sets the session cookie',
  caller: { kind: 'dashboard_visitor' },
  readsClientAddress: true,
  body: emailPasswordSchema,
  responses: { 200: { description: 'signed in', schema: signedInSchema } },
  errors: ['gw_invalid_credentials', 'gw_too_many_attempts', 'gw_unavailable'],
  async handler({ request, body, response }, deps: AccountDeps) {
    const { db, sessions, throttle } = deps.accounts;
    const email = normalizeEmail(body.email);
    // Counted before the password is checked: a burst sent at once cannot outrun the count.
    const waitMs = await throttle.attempt(email, request.remoteAddress);
    if (waitMs > 0) return tooManyAttempts('failed sign-ins', waitMs);
    const candidate = await findLoginCandidate(db, email);
    // An unknown e-mail costs the same scrypt as a known one: timing tells nothing.
    const matches = await verifyPassword(
      body.password,
      candidate?.passwordHash ?? (await decoyPasswordHash()),
    );
    const user = candidate && matches ? await loadDashboardUser(db, candidate.id) : null;
    if (!candidate || !user) return gwError('gw_invalid_credentials', INVALID_CREDENTIALS);
    await throttle.recordSuccess(email, request.remoteAddress);
    await answerSignedIn(request, response, sessions, user, candidate.sessionEpoch, 200);
  },
});
