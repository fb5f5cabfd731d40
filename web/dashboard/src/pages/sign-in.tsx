// Sign-in: e-mail and password; the gateway's answer (wrong password, too many attempts) shown.
// Sign-up, where the gateway allows it (DASHBOARD_SIGNUP): the same form makes the account (and
// its personal organization) and signs in. Where the gateway sends e-mail, a sign-up answers
// only that a link is on its way (the same for an address that has an account: decision 370);
// the form then signs in with the password, and says to check the inbox if that fails.
// "Forgot password?" where the gateway sends e-mail.
import { useState } from 'preact/hooks';
import { api, signUpOpen, type SignedIn, type VerificationSent } from '../api.js';
import { emailOn } from '../email-links.js';
import { useAction } from '../hooks.js';
import { navigate, navigateToSignIn } from '../router.js';
import { PASSWORD_MIN_LENGTH } from '../../../../src/accounts/password-rule.js';
import { EmailField, ErrorNote } from '../ui.js';

type Mode = 'sign-in' | 'sign-up';

export function SignInPage(props: { mode: Mode; onSignedIn(session: SignedIn): void }) {
  const signingUp = props.mode === 'sign-up';
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  /** A sign-up that could not sign in: the address it was for (check the inbox). */
  const [checkInbox, setCheckInbox] = useState<string | null>(null);
  const action = useAction();
  const signUp = async (): Promise<SignedIn | null> => {
    const answer = await api.post<SignedIn | VerificationSent>('/auth/signup', { email, password });
    if (!('verification_sent' in answer)) return answer;
    try {
      return await api.post<SignedIn>('/auth/login', { email, password });
    } catch {
      setCheckInbox(answer.email);
      return null;
    }
  };
  const switchTo = (mode: Mode) => (event: Event) => {
    event.preventDefault();
    action.clear();
    navigateToSignIn(mode);
  };
  return (
    <main class="sign-in">
      <form
        class="card"
        onInput={action.clear}
        onSubmit={action.submit(
          () => (signingUp ? signUp() : api.post<SignedIn>('/auth/login', { email, password })),
          (session) => session && props.onSignedIn(session),
        )}
      >
        <p class="brand">gw</p>
        <h1>{signingUp ? 'Create your account' : 'Sign in to the dashboard'}</h1>
        {signingUp && (
          <p class="muted small">
            You get an organization of your own, with an empty wallet; its operator funds it.
          </p>
        )}
        <EmailField value={email} onInput={setEmail} />
        <label>
          Password
          <input
            type="password"
            name="password"
            autocomplete={signingUp ? 'new-password' : 'current-password'}
            required
            {...(signingUp && { 'aria-describedby': 'password-rule' })}
            value={password}
            onInput={(event) => setPassword(event.currentTarget.value)}
          />
        </label>
        {signingUp && (
          <p class="hint" id="password-rule">
            At least {PASSWORD_MIN_LENGTH} characters.
          </p>
        )}
        <ErrorNote error={action.error} />
        {checkInbox !== null && (
          <p role="status">
            We sent a message to <strong>{checkInbox}</strong>: check your inbox to go on.
          </p>
        )}
        <button type="submit" disabled={action.busy}>
          {signingUp
            ? action.busy
              ? 'Creating the account…'
              : 'Create account'
            : action.busy
              ? 'Signing in…'
              : 'Sign in'}
        </button>
        {!signingUp && emailOn() && (
          <p class="muted small">
            <a
              href="/dashboard/forgot-password"
              onClick={(event) => {
                event.preventDefault();
                action.clear();
                navigate({ page: 'forgot-password' });
              }}
            >
              Forgot password?
            </a>
          </p>
        )}
        {signingUp ? (
          <p class="muted small">
            Have an account?{' '}
            <a href="/dashboard/sign-in" onClick={switchTo('sign-in')}>
              Sign in
            </a>
          </p>
        ) : signUpOpen() ? (
          <p class="muted small">
            No account yet?{' '}
            <a href="/dashboard/sign-up" onClick={switchTo('sign-up')}>
              Create one
            </a>
          </p>
        ) : (
          <p class="muted small">
            No account yet? An operator creates one with <code>gw admin create-user</code>.
          </p>
        )}
      </form>
    </main>
  );
}
