// POST /auth/password-reset/confirm {"token","new_password"}: sets a new password with the
// link "forgot password" e-mailed (decision 370). The new password follows the account rules
// (400 naming new_password, the link still open); the link works once, for 30 minutes (else
// 400 gw_email_token_invalid). Every use is counted per client address before the token is
// looked up (429 gw_too_many_attempts past the limit). On success every session of the user
// ends on every instance, their other reset links are void, the account's address counts as
// verified, and the reset is in the user's own organization's audit log. The browser is not
// signed in: it signs in with the new password.
import { z } from 'zod';
import { tooManyAttempts } from '../../accounts/login-throttle.js';
import { confirmPasswordReset } from '../../accounts/password-reset-by-email.js';
import { passwordProblem } from '../../accounts/passwords.js';
import { AccountRuleError } from '../../accounts/users.js';
import { gwError } from '../../errors.js';
import { declareRoute } from '../framework/declaration.js';
import type { AccountDeps } from './deps.js';
import { emailTokenField, INVALID_LINK, isRefusal, mailOrRefusal } from './email-gate.js';
import { passwordField } from './signed-in.js';
import { passwordResetSchema } from './answers.js';

export const passwordResetConfirmRoute = declareRoute({
  method: 'POST',
  path: '/auth/password-reset/confirm',
  summary:
    "Sets a new password with a reset link's token: every session of the account ends; sign in with the new password",
  caller: { kind: 'dashboard_visitor' },
  readsClientAddress: true,
  body: z.strictObject({ token: emailTokenField, new_password: passwordField }),
  responses: {
    200: {
      description: 'the password is reset',
      schema: passwordResetSchema,
    },
  },
  errors: ['gw_email_disabled', 'gw_email_token_invalid', 'gw_too_many_attempts', 'gw_unavailable'],
  async handler({ request, body }, deps: AccountDeps) {
    const { db, sessions, throttle } = deps.accounts;
    const mail = mailOrRefusal(deps.accounts.mail);
    if (isRefusal(mail)) return mail;
    // A password the rules refuse says nothing about the token: not counted, link still open.
    const problem = passwordProblem(body.new_password, 'new_password');
    if (problem) return gwError('gw_invalid_request', problem);
    const waitMs = await throttle.linkAttempt(request.remoteAddress);
    if (waitMs > 0) return tooManyAttempts('password-reset attempts', waitMs);
    try {
      const outcome = await confirmPasswordReset(db, sessions, body.token, body.new_password);
      if (outcome.kind === 'invalid_token') return gwError('gw_email_token_invalid', INVALID_LINK);
      // Whoever was locked out by failed sign-ins may sign in with the new password at once.
      await throttle.clearAccount(outcome.email);
      return { password_reset: true, email: outcome.email, sessions_ended: outcome.sessionsEnded };
    } catch (error) {
      if (error instanceof AccountRuleError) return gwError('gw_invalid_request', error.message);
      throw error;
    }
  },
});
