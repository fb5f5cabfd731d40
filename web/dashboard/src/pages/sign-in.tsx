// Sign-in: e-mail and password; the gateway's answer (wrong password, too many attempts) shown.
import { useState } from 'preact/hooks';
import { api, type SignedIn } from '../api.js';
import { useAction } from '../hooks.js';
import { ErrorNote } from '../ui.js';

export function SignInPage({ onSignedIn }: { onSignedIn(session: SignedIn): void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  return (
    <main class="sign-in">
      <form
        class="card"
        onSubmit={action.submit(
          () => api.post<SignedIn>('/auth/login', { email, password }),
          onSignedIn,
        )}
      >
        <p class="brand">gw</p>
        <h1>Sign in to the dashboard</h1>
        <label>
          E-mail
          <input
            type="email"
            name="email"
            autocomplete="username"
            required
            value={email}
            onInput={(event) => setEmail(event.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            type="password"
            name="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(event) => setPassword(event.currentTarget.value)}
          />
        </label>
        <ErrorNote error={action.error} />
        <button type="submit" disabled={action.busy}>
          {action.busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="muted small">
          No account yet? An operator creates one with <code>gw admin create-user</code>.
        </p>
      </form>
    </main>
  );
}
