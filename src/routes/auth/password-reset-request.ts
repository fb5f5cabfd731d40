// POST /auth/password-reset/request {"email"}: "forgot password". Answers 202 the same way
// whether or not the address has an account, and if it has one, e-mails it a link that sets a
// new password (single use, 30 minutes; decision 370). Counted per client address, and per
// address asked for, known or not: per (address, client) and against the address's ceiling
// (decision 450; 429 gw_too_many_attempts with Retry-After past any), before anything is
// looked up. Where gw sends no e-mail: 403 gw_email_disabled.
import { z } from 'zod';
import { tooManyAttempts } from '../../accounts/login-throttle.js';
import { requestPasswordReset } from '../../accounts/password-reset-by-email.js';
import { EMAIL_MAX_LENGTH, isAccountEmail, normalizeEmail } from '../../accounts/users.js';
import { gwError } from '../../errors.js';
import { declareRoute } from '../framework/declaration.js';
import type { AccountDeps } from './deps.js';
import { isRefusal, mailOrRefusal } from './email-gate.js';

export const passwordResetRequestRoute = declareRoute({
  method: 'POST',
  path: '/auth/password-reset/request',
  summary:
    "Forgot password: e-mails a reset link to the address's account, if it has one (the answer is the same either way)",
  caller: { kind: 'dashboard_visitor' },
  readsClientAddress: true,
  body: z.strictObject({ email: z.string().max(EMAIL_MAX_LENGTH) }),
  responses: {
    202: {
      description: 'if the address has an account, a reset link is on its way to it',
      schema: z.object({ reset_requested: z.literal(true) }),
    },
  },
  errors: ['gw_email_disabled', 'gw_too_many_attempts', 'gw_unavailable'],
  async handler({ request, body }, deps: AccountDeps) {
    const { db, throttle } = deps.accounts;
    const mail = mailOrRefusal(deps.accounts.mail);
    if (isRefusal(mail)) return mail;
    const email = normalizeEmail(body.email);
    if (!isAccountEmail(email)) {
      return gwError(
        'gw_invalid_request',
        'email: must be an e-mail address of at most 254 characters',
      );
    }
    const [byClient, byRecipient] = await Promise.all([
      throttle.resetRequestAttempt(request.remoteAddress),
      throttle.emailAttempt(email, request.remoteAddress),
    ]);
    const waitMs = Math.max(byClient, byRecipient);
    if (waitMs > 0) return tooManyAttempts('password-reset requests', waitMs);
    await requestPasswordReset(db, mail, email);
    return { reset_requested: true };
  },
});
