// POST /auth/login: signs a dashboard user in with e-mail and password. One generic error for
// a wrong e-mail or password; failures are throttled per account and per client address.
// Every sign-in gets a new session id (and ends the session the browser presented, if any).
import { z } from 'zod';
import { tooManyAttempts } from '../../accounts/login-throttle.js';
import {
  decoyPasswordHash,
  PASSWORD_MAX_UTF16_UNITS,
  verifyPassword,
} from '../../accounts/passwords.js';
import type { SessionStore } from '../../accounts/sessions.js';
import {
  EMAIL_MAX_LENGTH,
  findLoginCandidate,
  loadDashboardUser,
  normalizeEmail,
  type DashboardUser,
} from '../../accounts/users.js';
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import { gwError } from '../../errors.js';
import { declareRoute } from '../framework/declaration.js';
import { dashboardUserSchema, orgSummarySchema } from '../dashboard/schemas.js';
import type { AccountDeps } from './deps.js';

/** The body of sign-in and sign-up: an e-mail and a password, no longer than an account holds. */
export const emailPasswordSchema = z.strictObject({
  email: z.string().max(EMAIL_MAX_LENGTH),
  password: z.string().max(PASSWORD_MAX_UTF16_UNITS),
});

export const signedInSchema = z.object({
  user: dashboardUserSchema,
  orgs: z.array(orgSummarySchema),
});

const INVALID_CREDENTIALS = 'wrong e-mail or password';

export const loginRoute = declareRoute({
  method: 'POST',
  path: '/auth/login',
  summary: 'Signs in to the dashboard: sets the session cookie',
  caller: { kind: 'dashboard_visitor' },
  body: emailPasswordSchema,
  responses: { 200: { description: 'signed in', schema: signedInSchema } },
  errors: ['gw_invalid_credentials', 'gw_too_many_attempts', 'gw_unavailable'],
  async handler({ request, body, response }, deps: AccountDeps) {
    const { db, sessions, throttle } = deps.accounts;
    const email = normalizeEmail(body.email);
    const waitMs = await throttle.blockedForMs(email, request.remoteAddress);
    if (waitMs > 0) return tooManyAttempts('failed sign-ins', waitMs);
    const candidate = await findLoginCandidate(db, email);
    // An unknown e-mail costs the same scrypt as a known one: timing tells nothing.
    const matches = await verifyPassword(
      body.password,
      candidate?.passwordHash ?? (await decoyPasswordHash()),
    );
    const user = candidate && matches ? await loadDashboardUser(db, candidate.id) : null;
    if (!user) {
      await throttle.recordFailure(email, request.remoteAddress);
      return gwError('gw_invalid_credentials', INVALID_CREDENTIALS);
    }
    await throttle.recordSuccess(email);
    await answerSignedIn(request, response, sessions, user, 200);
  },
});

/**
 * Starts a session for `user` (ending the one the browser presented, if any: a session id
 * planted before sign-in is worthless) and answers the user and their organizations with
 * the session cookie.
 */
export async function answerSignedIn(
  request: HttpRequest,
  response: HttpResponse,
  sessions: SessionStore,
  user: DashboardUser,
  status: 200 | 201,
): Promise<void> {
  const presented = sessions.idFromCookieHeader(request.headers.cookie);
  const previous = presented ? await sessions.find(presented) : null;
  if (previous) await sessions.destroy(previous.handle);
  const { id } = await sessions.create(user.id);
  response.writeHead(status, {
    'content-type': 'application/json',
    'set-cookie': sessions.cookie(id),
  });
  response.end(
    JSON.stringify({
      user: { id: user.id, email: user.email, personal_org_id: user.personalOrgId },
      orgs: user.memberships.map(({ id: orgId, name, role }) => ({ id: orgId, name, role })),
    }),
  );
}
