// POST /auth/signup {"email","password"}: self-service sign-up, where the operator turned it on
// (DASHBOARD_SIGNUP; off by default: 403 gw_signup_disabled). Makes the user and their
// personal organization (with its wallet, which starts empty) exactly as
// `gw admin create-user` does, and signs them in (the session cookie, as /auth/login). Every
// attempt is counted per client address (429 gw_too_many_attempts with Retry-After past
// the limit), before any password is hashed.
import { z } from 'zod';
import { PASSWORD_MAX_LENGTH } from '../../accounts/passwords.js';
import {
  AccountRuleError,
  createUser,
  EMAIL_MAX_LENGTH,
  loadDashboardUser,
} from '../../accounts/users.js';
import { gwError } from '../../errors.js';
import { declareRoute } from '../framework/declaration.js';
import type { AccountDeps } from './deps.js';
import { answerSignedIn, signedInSchema } from './login.js';

const signupSchema = z.strictObject({
  email: z.string().max(EMAIL_MAX_LENGTH),
  password: z.string().max(PASSWORD_MAX_LENGTH),
});

export const signupRoute = declareRoute({
  method: 'POST',
  path: '/auth/signup',
  summary: 'Self-service sign-up (when enabled): a new user and their personal organization',
  caller: { kind: 'none' },
  body: signupSchema,
  responses: { 201: { description: 'signed up and signed in', schema: signedInSchema } },
  errors: ['gw_signup_disabled', 'gw_too_many_attempts', 'gw_conflict', 'gw_unavailable'],
  async handler({ request, body, response }, deps: AccountDeps) {
    const { db, sessions, throttle, signup } = deps.accounts;
    if (!signup) {
      return gwError(
        'gw_signup_disabled',
        'self-service sign-up is off on this gateway; ask an admin',
      );
    }
    const waitMs = await throttle.signupAttempt(request.remoteAddress);
    if (waitMs > 0) {
      const retryAfterS = Math.ceil(waitMs / 1000);
      return gwError('gw_too_many_attempts', `too many sign-ups; try again in ${retryAfterS} s`, {
        headers: { 'retry-after': String(retryAfterS) },
      });
    }
    let userId: string;
    try {
      userId = (await createUser(db, { email: body.email, password: body.password })).user_id;
    } catch (error) {
      if (!(error instanceof AccountRuleError)) throw error;
      return error.conflict
        ? gwError('gw_conflict', 'an account with this e-mail exists: sign in instead')
        : gwError('gw_invalid_request', error.message);
    }
    const user = (await loadDashboardUser(db, userId))!;
    await answerSignedIn(request, response, sessions, user, 201);
  },
});
