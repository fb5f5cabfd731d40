// POST /auth/verify-email {"token"}: follows the link a sign-up's e-mail carries (decision
// 370): the account's address is verified, and the account may do everything its roles allow.
// The link works once, for 24 hours, while the account still has the address (else 400
// gw_email_token_invalid). Needs no session: whoever reads the mail proves the address. Every
// use counts against the client address as a reset link's does.
import { z } from 'zod';
import { verifyEmail } from '../../accounts/email-verification.js';
import { tooManyAttempts } from '../../accounts/login-throttle.js';
import { gwError } from '../../errors.js';
import { declareRoute } from '../framework/declaration.js';
import type { AccountDeps } from './deps.js';
import { emailTokenField, INVALID_LINK, isRefusal, mailOrRefusal } from './email-gate.js';
import { emailVerifiedSchema } from './answers.js';

export const verifyEmailRoute = declareRoute({
  method: 'POST',
  path: '/auth/verify-email',
  summary: "Verifies an account's e-mail address with the token of the link gw mailed it",
  caller: { kind: 'dashboard_visitor' },
  readsClientAddress: true,
  body: z.strictObject({ token: emailTokenField }),
  responses: {
    200: {
      description: 'the address is verified',
      schema: emailVerifiedSchema,
    },
  },
  errors: ['gw_email_disabled', 'gw_email_token_invalid', 'gw_too_many_attempts', 'gw_unavailable'],
  async handler({ request, body }, deps: AccountDeps) {
    const refusal = mailOrRefusal(deps.accounts.mail);
    if (isRefusal(refusal)) return refusal;
    const waitMs = await deps.accounts.throttle.linkAttempt(request.remoteAddress);
    if (waitMs > 0) return tooManyAttempts('uses of e-mailed links', waitMs);
    const verified = await verifyEmail(deps.accounts.db, body.token);
    if (!verified) return gwError('gw_email_token_invalid', INVALID_LINK);
    return { email_verified: true, email: verified.email };
  },
});
