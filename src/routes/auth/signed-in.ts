// What sign-in and sign-up share: the e-mail and password body, and the answer that starts a
// session (its cookie, the user and their organizations).
import { z } from 'zod';
import { PASSWORD_MAX_UTF16_UNITS, PASSWORD_TOO_LONG } from '../../accounts/passwords.js';
import type { SessionStore } from '../../accounts/sessions.js';
import { dashboardUserView, EMAIL_MAX_LENGTH, type DashboardUser } from '../../accounts/users.js';
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import { jsonHeaders } from '../../http/respond.js';
import type { reviewAfterResetSchema, signedInSchema } from './answers.js';

/**
 * A password in a body: no longer than an account holds (bounded in UTF-16 units, the rule is
 * in characters; refused in the rule's words either way).
 */
export const passwordField = z.string().max(PASSWORD_MAX_UTF16_UNITS, { error: PASSWORD_TOO_LONG });

/** The body of sign-in and sign-up: an e-mail and a password, no longer than an account holds. */
export const emailPasswordSchema = z.strictObject({
  email: z.string().max(EMAIL_MAX_LENGTH),
  password: passwordField,
});

/**
 * Starts a session for `user` of the session epoch `sessionEpoch` (read with the password hash
 * that was checked, so a password change meanwhile ends it), ending the one the browser
 * presented, if any (a session id planted before sign-in is worthless), and answers the user
 * and their organizations with the session cookie.
 */
export async function answerSignedIn(
  request: HttpRequest,
  response: HttpResponse,
  sessions: SessionStore,
  user: DashboardUser,
  sessionEpoch: number,
  status: 200 | 201,
): Promise<void> {
  const presented = sessions.idFromCookieHeader(request.headers.cookie);
  const previous = presented ? await sessions.find(presented) : null;
  if (previous) await sessions.destroy(previous);
  const { id } = await sessions.create(user.id, sessionEpoch);
  response.writeHead(status, {
    ...jsonHeaders,
    'set-cookie': sessions.cookie(id),
  });
  response.end(JSON.stringify(signedInView(user)));
}

/**
 * Who is signed in and their organizations: the answer of sign-in, sign-up and
 * `GET /auth/session`.
 */
export function signedInView(user: DashboardUser): z.infer<typeof signedInSchema> {
  return {
    user: dashboardUserView(user),
    orgs: user.memberships.map(({ id, name, role }) => ({ id, name, role })),
    review_after_reset: reviewAfterResetView(user.reviewAfterResetAt),
  };
}

export function reviewAfterResetView(at: Date | null): z.infer<typeof reviewAfterResetSchema> {
  return at === null ? null : { password_reset_at: at.toISOString() };
}
