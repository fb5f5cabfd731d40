// gw admin set-password | end-sessions: the operator resets a dashboard user's password, or
// signs them out of every browser. Both end every session of the user at once, on every
// gateway instance (src/accounts/user-sessions.ts).
import { LoginThrottle } from '../accounts/login-throttle.js';
import { resetPassword } from '../accounts/password-change.js';
import { sessionSettingsOf, SessionStore } from '../accounts/sessions.js';
import { endEverySession } from '../accounts/user-sessions.js';
import { AccountRuleError, findUserByEmail } from '../accounts/users.js';
import type { CliContext } from './context.js';
import { printJson, UsageError } from './output.js';
import { readPassword } from './password-input.js';

export const adminSessionsHelp = `gw admin set-password --email E [--password-stdin]
  Sets the user's password (12 to 256 characters), ends every session they have, on every
  gateway instance, and forgets their failed sign-ins. The password comes from standard input
  with --password-stdin (one line), or is asked for twice at a terminal; never as an argument.
  Prints what a reset by e-mail answers (POST /auth/password-reset/confirm):
  {"password_reset":true,"email","sessions_ended"}.
gw admin end-sessions --email E
  Signs the user out of every browser at once (their password is not touched). Prints what
  signing out everywhere answers (POST /auth/logout-everywhere): {"signed_out":true,
  "sessions_ended"}.`;

function sessionStore(context: CliContext): SessionStore {
  return new SessionStore(context.redis, context.keys, sessionSettingsOf(context.config));
}

const noUser = (email: string): UsageError =>
  new UsageError(
    `no dashboard user with the e-mail ${JSON.stringify(email)} (create one with gw admin create-user)`,
    'gw_not_found',
  );

export async function setPasswordCommand(
  context: CliContext,
  email: string,
  fromStdin: boolean,
): Promise<void> {
  // Before the password is asked for: a mistyped e-mail is said at once.
  if (!(await findUserByEmail(context.db, email))) throw noUser(email);
  const password = await readPassword('set-password', { fromStdin });
  let reset;
  try {
    reset = await resetPassword(context.db, sessionStore(context), email, password);
  } catch (error) {
    if (error instanceof AccountRuleError) throw new UsageError(error.message);
    throw error;
  }
  if (!reset) throw noUser(email);
  // As a reset by e-mail does: a user held back by failed sign-ins (often why the operator is
  // asked) signs in with the new password at once (decision 447).
  await new LoginThrottle(context.redis, context.keys).clearAccount(reset.email);
  printJson({ password_reset: true, email: reset.email, sessions_ended: reset.sessions_ended });
}

export async function endSessionsCommand(context: CliContext, email: string): Promise<void> {
  const user = await findUserByEmail(context.db, email);
  const ended = user && (await endEverySession(context.db, sessionStore(context), user.user_id));
  if (!user || !ended) throw noUser(email);
  printJson({ signed_out: true, sessions_ended: ended.ended.length });
}
