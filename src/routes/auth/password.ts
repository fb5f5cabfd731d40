// POST /auth/password {"current_password","new_password"}: the signed-in user changes their
// password. The current one is required, and guesses at it are throttled with the sign-in's
// count for the account and the address (a stolen session gets no more guesses than the
// sign-in page). On success every session of the user ends, on every instance at once, and
// this browser gets a new session (a new id and CSRF token, OWASP's advice after a change of
// credentials) in the answer's cookie.
import { z } from 'zod';
import { tooManyAttempts } from '../../accounts/login-throttle.js';
import { changePassword } from '../../accounts/password-change.js';
import { passwordProblem } from '../../accounts/passwords.js';
import { gwError } from '../../errors.js';
import { noStoreJsonHeaders } from '../../http/respond.js';
import { declareRoute } from '../framework/declaration.js';
import type { AccountDeps } from './deps.js';
import { passwordField } from './signed-in.js';
import { passwordChangedSchema } from './answers.js';

export const changePasswordRoute = declareRoute({
  method: 'POST',
  path: '/auth/password',
  summary:
    "Changes the signed-in user's password: every other session ends, this one continues under a new id",
  caller: { kind: 'session', unverified: 'allowed' },
  readsClientAddress: true,
  body: z.strictObject({ current_password: passwordField, new_password: passwordField }),
  responses: {
    200: {
      description: 'changed; the new session cookie is set (fetch /auth/csrf again)',
      schema: passwordChangedSchema,
    },
  },
  errors: ['gw_invalid_credentials', 'gw_too_many_attempts', 'gw_conflict'],
  async handler({ request, caller, body, response }, deps: AccountDeps) {
    const { db, sessions, throttle } = deps.accounts;
    // A new password the rules refuse says nothing about the current one: not counted.
    const problem = passwordProblem(body.new_password, 'new_password');
    if (problem) return gwError('gw_invalid_request', problem);
    const { email } = caller.user;
    const waitMs = await throttle.attempt(email, request.remoteAddress);
    if (waitMs > 0) return tooManyAttempts('failed password attempts', waitMs);
    const change = await changePassword(
      db,
      sessions,
      caller.user.id,
      body.current_password,
      body.new_password,
    );
    if (change.kind === 'wrong_current_password') {
      return gwError('gw_invalid_credentials', 'current_password: wrong password');
    }
    if (change.kind === 'changed_meanwhile') {
      return gwError('gw_conflict', 'the password was changed meanwhile; sign in again');
    }
    await throttle.recordSuccess(email, request.remoteAddress);
    const { id } = await sessions.create(caller.user.id, change.epoch);
    response.writeHead(200, { ...noStoreJsonHeaders, 'set-cookie': sessions.cookie(id) });
    response.end(
      JSON.stringify({
        password_changed: true,
        other_sessions_ended: change.ended.filter((handle) => handle !== caller.session.handle)
          .length,
      }),
    );
  },
});
