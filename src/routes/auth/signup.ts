// POST /auth/signup {"email","password"}: self-service sign-up, where the operator turned it on
// (DASHBOARD_SIGNUP; off by default: 403 gw_signup_disabled). Makes the user and their
// personal organization (with its wallet, which starts empty) exactly as
// `gw admin create-user` does, and signs them in (the session cookie, as /auth/login). Every
// attempt is counted per client address (429 gw_too_many_attempts with Retry-After past
// the limit), before any password is hashed — a body refused as malformed too.
// Where gw sends e-mail (SMTP_URL, decision 370), a sign-up signs nobody in: it answers 202
// the same whether the address was free (an unverified account is made and sent a
// verification link), held past 24 hours by an account never verified (taken over), or
// another account's (its owner is sent a notice instead). Each counts against the address
// too (the e-mails one address may be sent).
import { tooManyAttempts } from '../../accounts/login-throttle.js';
import { signUpWithVerification } from '../../accounts/email-verification.js';
import {
  AccountRuleError,
  createUser,
  loadDashboardUser,
  normalizeEmail,
} from '../../accounts/users.js';
import { gwError, type GwError } from '../../errors.js';
import { answer, declareRoute } from '../framework/declaration.js';
import type { AccountDeps } from './deps.js';
import { answerSignedIn, emailPasswordSchema } from './signed-in.js';
import { signedInSchema, verificationSentSchema } from './answers.js';

export const signupRoute = declareRoute({
  method: 'POST',
  path: '/auth/signup',
  summary: 'Self-service sign-up (when enabled): a new user and their personal organization',
  caller: { kind: 'dashboard_visitor' },
  readsClientAddress: true,
  body: emailPasswordSchema,
  responses: {
    201: { description: 'signed up and signed in (gw sends no e-mail)', schema: signedInSchema },
    202: {
      description:
        'where gw sends e-mail: a verification link (or, for an address with an account, a notice) is on its way; sign in with the password',
      schema: verificationSentSchema,
    },
  },
  errors: ['gw_signup_disabled', 'gw_too_many_attempts', 'gw_conflict', 'gw_unavailable'],
  // A body the router refuses is an attempt too: it is counted (and answered 429 past the
  // limit). A request refused before its body was read (too large, a bad query string) is
  // not: a form on another site can send one, and the Origin check has not run yet, so
  // counting it would let any site spend a visitor's attempts (decision 292).
  onRefused: ({ request, rawBody }, deps: AccountDeps) =>
    rawBody === null ? Promise.resolve(undefined) : signupGate(request.remoteAddress, deps),
  async handler({ request, body, response }, deps: AccountDeps) {
    const { db, sessions } = deps.accounts;
    const refusal = await signupGate(request.remoteAddress, deps);
    if (refusal) return refusal;
    if (deps.accounts.mail) {
      const email = normalizeEmail(body.email);
      const waitMs = await deps.accounts.throttle.emailAttempt(email, request.remoteAddress);
      if (waitMs > 0) return tooManyAttempts('sign-ups with this e-mail', waitMs);
      try {
        await signUpWithVerification(db, sessions, deps.accounts.mail, body);
      } catch (error) {
        if (!(error instanceof AccountRuleError)) throw error;
        return gwError('gw_invalid_request', error.message);
      }
      return answer(202, { email, verification_sent: true });
    }
    let userId: string;
    try {
      // Unverified (nothing proved the address), with no hold: without e-mail nobody could
      // follow a link before one expired, so sign-up never takes such an account over.
      userId = (
        await createUser(db, {
          email: body.email,
          password: body.password,
          signup: { holdMs: null },
        })
      ).user_id;
    } catch (error) {
      if (!(error instanceof AccountRuleError)) throw error;
      return error.conflict
        ? gwError('gw_conflict', 'an account with this e-mail exists: sign in instead')
        : gwError('gw_invalid_request', error.message);
    }
    const user = (await loadDashboardUser(db, userId))!;
    await answerSignedIn(request, response, sessions, user, user.sessionEpoch, 201);
  },
});

/**
 * What every sign-up attempt goes through first, whatever its body: refused while sign-up is
 * off; else counted against its address, and refused past the limit.
 */
async function signupGate(address: string, deps: AccountDeps): Promise<GwError | undefined> {
  if (!deps.accounts.signup) {
    return gwError(
      'gw_signup_disabled',
      'self-service sign-up is off on this gateway; ask an admin',
    );
  }
  const waitMs = await deps.accounts.throttle.signupAttempt(address);
  return waitMs === 0 ? undefined : tooManyAttempts('sign-ups', waitMs);
}
