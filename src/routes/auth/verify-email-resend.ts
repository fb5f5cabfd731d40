// POST /auth/verify-email/resend: the signed-in user, whose address is not verified yet, is
// mailed a new verification link (decision 370); links sent before keep working until they
// expire. Counted against the address like every request that e-mails it (429
// gw_too_many_attempts past the limit); an address already verified answers 409 gw_conflict.
// One of the few writes an unverified account may make.
import { z } from 'zod';
import { resendVerification } from '../../accounts/email-verification.js';
import { tooManyAttempts } from '../../accounts/login-throttle.js';
import { gwError } from '../../errors.js';
import { declareRoute } from '../framework/declaration.js';
import type { AccountDeps } from './deps.js';
import { isRefusal, mailOrRefusal } from './email-gate.js';

export const resendVerificationRoute = declareRoute({
  method: 'POST',
  path: '/auth/verify-email/resend',
  summary: "Mails the signed-in user's unverified address a new verification link",
  caller: { kind: 'session', unverified: 'allowed' },
  readsClientAddress: true,
  responses: {
    202: {
      description: 'a new link is on its way',
      schema: z.object({ verification_sent: z.literal(true), email: z.string() }),
    },
  },
  errors: ['gw_email_disabled', 'gw_conflict', 'gw_too_many_attempts'],
  async handler({ request, caller: { user } }, deps: AccountDeps) {
    const mail = mailOrRefusal(deps.accounts.mail);
    if (isRefusal(mail)) return mail;
    if (user.emailVerified)
      return gwError('gw_conflict', 'your e-mail address is verified already');
    const waitMs = await deps.accounts.throttle.emailAttempt(user.email, request.remoteAddress);
    if (waitMs > 0) return tooManyAttempts('e-mails to this address', waitMs);
    await resendVerification(deps.accounts.db, mail, user);
    return { verification_sent: true, email: user.email };
  },
});
