// What gw's e-mail brings to the dashboard (decision 370), where the gateway sends any (its page
// carries <meta name="gw-email">): "forgot password" (a form that asks for a reset link, and
// the form the link opens to set a new password), the verification link of a sign-up, and the
// banner an account with an unverified address sees, with a way to send the link again.
// A link's token rides in the URL's fragment (`#password_reset_token=…`,
// `#email_verification_token=…`), which no browser sends to a server; it is read once as the
// app loads and taken out of the address bar, so it is not left in the history.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type EmailVerified, type PasswordReset, type SignedIn } from './api.js';
import { asApiError, useAction } from './hooks.js';
import { navigateToSignIn } from './router.js';
import { NewPasswordFields, newPasswordProblem } from './new-password.js';
import { EmailField, ErrorNote } from './ui.js';

/** Whether this gateway sends e-mail (its page says so: see the page route). */
export const emailOn = (): boolean =>
  document.querySelector('meta[name="gw-email"]')?.getAttribute('content') === 'on';

function takeFragmentToken(name: string): string | null {
  const token = new RegExp(`${name}=([0-9A-Za-z_]+)`).exec(location.hash)?.[1] ?? null;
  if (token !== null) {
    history.replaceState(history.state, '', location.pathname + location.search);
  }
  return token;
}

/** The tokens of the link the page was opened from, taken as the app loads. */
export const openedWith = {
  passwordReset: takeFragmentToken('password_reset_token'),
  emailVerification: takeFragmentToken('email_verification_token'),
};

/** "Forgot password?": asks for a reset link; the answer is the same for any address. */
export function ForgotPasswordPage() {
  const [email, setEmail] = useState('');
  const [sentTo, setSentTo] = useState<string | null>(null);
  const action = useAction();
  return (
    <main class="sign-in">
      <form
        class="card"
        onInput={action.clear}
        onSubmit={action.submit(
          () => api.post('/auth/password-reset/request', { email }),
          () => setSentTo(email.trim()),
        )}
      >
        <p class="brand">gw</p>
        <h1>Reset your password</h1>
        {sentTo === null ? (
          <>
            <p class="muted small">
              Enter your account's e-mail address. If it has an account, we send it a link to choose
              a new password; the link works once, for 30 minutes.
            </p>
            <EmailField value={email} onInput={setEmail} />
            <ErrorNote error={action.error} />
            <button type="submit" disabled={action.busy}>
              {action.busy ? 'Sending…' : 'Send the link'}
            </button>
          </>
        ) : (
          <p role="status">
            If <strong>{sentTo}</strong> has an account, a link to reset its password is on its way.
            Check your inbox (and spam folder); the link works for 30 minutes.
          </p>
        )}
        <p class="muted small">
          Remembered it?{' '}
          <a
            href="/dashboard/sign-in"
            onClick={(event) => {
              event.preventDefault();
              navigateToSignIn('sign-in', { comeBack: false });
            }}
          >
            Sign in
          </a>
        </p>
      </form>
    </main>
  );
}

/** The form a reset link opens: a new password, twice. */
export function ResetPasswordPage(props: { token: string; onDone(email: string): void }) {
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [reset, setReset] = useState<{ email: string } | null>(null);
  const action = useAction();
  return (
    <main class="sign-in">
      <form
        class="card"
        onInput={action.clear}
        onSubmit={(event) => {
          event.preventDefault();
          const problem = newPasswordProblem(next, again);
          if (problem) {
            action.refuse(problem);
            return;
          }
          void action
            .run(() =>
              api.post<PasswordReset>('/auth/password-reset/confirm', {
                token: props.token,
                new_password: next,
              }),
            )
            .then((done) => done && setReset(done.value));
        }}
      >
        <p class="brand">gw</p>
        <h1>Choose a new password</h1>
        {reset === null ? (
          <>
            <p class="muted small">
              Every browser signed in to the account is signed out when the password changes.
            </p>
            <NewPasswordFields next={next} again={again} onNext={setNext} onAgain={setAgain} />
            <ErrorNote error={action.error} />
            <button type="submit" disabled={action.busy}>
              {action.busy ? 'Saving…' : 'Set the new password'}
            </button>
          </>
        ) : (
          <>
            <p role="status">
              The password of <strong>{reset.email}</strong> is reset, and every session of the
              account has ended. Sign in with the new password.
            </p>
            <p class="muted small">
              Once signed in, review what your account made recently: the apps it approved, the
              keys, OAuth clients and webhook endpoints it created, the invitations it sent and the
              members it let in or gave a higher role keep working after a reset.
            </p>
            <button type="button" onClick={() => props.onDone(reset.email)}>
              Sign in
            </button>
          </>
        )}
      </form>
    </main>
  );
}

export type Verification =
  | { readonly kind: 'verifying' }
  | { readonly kind: 'verified'; readonly email: string }
  | { readonly kind: 'failed'; readonly error: ApiError };

/**
 * Follows the verification link the page was opened from, once for the app's life (the App
 * holds it, so signing in after following it does not follow it again), and says how it went.
 * `onVerified`: the session is read again (its address is now verified).
 */
export function useEmailVerification(onVerified: () => void): Verification | null {
  const token = openedWith.emailVerification;
  const [state, setState] = useState<Verification | null>(
    token === null ? null : { kind: 'verifying' },
  );
  useEffect(() => {
    if (token === null) return;
    api.post<EmailVerified>('/auth/verify-email', { token }).then(
      (answer) => {
        setState({ kind: 'verified', email: answer.email });
        onVerified();
      },
      (error: unknown) => setState({ kind: 'failed', error: asApiError(error) }),
    );
  }, []);
  return state;
}

/** How following the link went (above the sign-in page or the signed-in dashboard). */
export function VerificationResult({ state }: { state: Verification | null }) {
  if (state === null) return null;
  if (state.kind === 'failed') return <ErrorNote error={state.error} />;
  return (
    <p class="email-notice card" role="status">
      {state.kind === 'verifying' ? (
        'Verifying your e-mail address…'
      ) : (
        <>
          Your e-mail address <strong>{state.email}</strong> is verified.
        </>
      )}
    </p>
  );
}

/** Above every page of an account whose address is not verified yet: what waits, and resend. */
export function UnverifiedBanner({ session }: { session: SignedIn }) {
  const [sent, setSent] = useState(false);
  const action = useAction();
  if (!emailOn() || session.user.email_verified) return null;
  return (
    <section class="email-notice card" aria-labelledby="unverified-heading">
      <h2 id="unverified-heading">Verify your e-mail address</h2>
      <p>
        We sent a link to <strong>{session.user.email}</strong>. Open it to confirm the address is
        yours. Until then you can look around and change your password, but not change anything
        else, join an organization or connect an app.
      </p>
      <div class="actions">
        <button
          type="button"
          class="secondary"
          disabled={action.busy}
          onClick={() =>
            void action
              .run(() => api.post('/auth/verify-email/resend'))
              .then((done) => done && setSent(true))
          }
        >
          {action.busy ? 'Sending…' : 'Send the link again'}
        </button>
        {sent && (
          <span class="ok" role="status">
            A new link is on its way.
          </span>
        )}
      </div>
      <ErrorNote error={action.error} />
    </section>
  );
}
