// The signed-in user's own account: what the account made that still works (approvals, keys:
// made-recently.tsx), change the password (every other browser signed in as them is signed
// out; this one stays signed in under a new session), sign out everywhere, and what was done in
// their name (their audit entries in every organization they are in).
import { useState } from 'preact/hooks';
import { api, forgetCsrfToken, type PasswordChanged, type SignedIn } from '../api.js';
import { useAction, useNotice, usePaged } from '../hooks.js';
import { MadeRecently } from '../made-recently.js';
import { NewPasswordFields, newPasswordProblem } from '../new-password.js';
import { orgView } from '../router.js';
import { Confirm, ErrorNote, Link, PageHeader } from '../ui.js';
import type { ActivityEntry } from '../types.js';
import { AuditEntries } from './audit-log.js';

export function AccountPage(props: { session: SignedIn; onSignedOutEverywhere(): void }) {
  return (
    <>
      <PageHeader title="Your account">
        Signed in as <strong>{props.session.user.email}</strong>.
      </PageHeader>
      <MadeRecently session={props.session} />
      <ChangePassword email={props.session.user.email} />
      <SignOutEverywhere onDone={props.onSignedOutEverywhere} />
      <YourActivity />
    </>
  );
}

function ChangePassword({ email }: { email: string }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [done, setDone] = useNotice<number>();
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="change-password-heading"
      onInput={() => action.clear()}
      onSubmit={(event) => {
        event.preventDefault();
        setDone(null);
        const problem = newPasswordProblem(next, again);
        if (problem) {
          action.refuse(problem);
          return;
        }
        void action
          .run(() =>
            api.post<PasswordChanged>('/auth/password', {
              current_password: current,
              new_password: next,
            }),
          )
          .then((changed) => {
            if (!changed) return;
            // this browser's session was renewed: a new CSRF token with it
            forgetCsrfToken();
            setCurrent('');
            setNext('');
            setAgain('');
            setDone(changed.value.other_sessions_ended);
          });
      }}
    >
      <h2 id="change-password-heading">Change your password</h2>
      <p class="muted small">
        Every other browser signed in to your account is signed out at once; this one stays signed
        in.
      </p>
      {/* for password managers: the account whose password this is */}
      <input type="text" name="username" autocomplete="username" value={email} readOnly hidden />
      <label>
        Current password
        <input
          type="password"
          name="current-password"
          autocomplete="current-password"
          required
          value={current}
          onInput={(event) => setCurrent(event.currentTarget.value)}
        />
      </label>
      <NewPasswordFields next={next} again={again} onNext={setNext} onAgain={setAgain} sideBySide />
      <ErrorNote error={action.error} />
      <button type="submit" disabled={action.busy}>
        {action.busy ? 'Changing…' : 'Change password'}
      </button>
      <p class="muted small" role="status" aria-live="polite">
        {done !== null && `Password changed. ${signedOutElsewhere(done)}`}
      </p>
    </form>
  );
}

function signedOutElsewhere(count: number): string {
  if (count === 0) return 'No other browser was signed in.';
  return count === 1
    ? '1 other browser was signed out.'
    : `${count} other browsers were signed out.`;
}

function SignOutEverywhere({ onDone }: { onDone(): void }) {
  const [confirming, setConfirming] = useState(false);
  return (
    <section class="card" aria-labelledby="sign-out-everywhere-heading">
      <h2 id="sign-out-everywhere-heading">Sign out everywhere</h2>
      <p class="muted small">
        Ends every session of your account on every browser and device, this one included. Use it if
        you signed in on a computer that is not yours, or lost one. Your password stays as it is: if
        someone else may know it, change it instead. Then sign in again and read{' '}
        <a href="#your-activity-heading">your recent activity</a> below: undo anything you did not
        do (keys issued, apps connected, members invited) in the organization it names.
      </p>
      <button type="button" class="danger" onClick={() => setConfirming(true)}>
        Sign out everywhere…
      </button>
      {confirming && (
        <Confirm
          title="Sign out of every browser?"
          confirmLabel="Sign out everywhere"
          write={() => api.post('/auth/logout-everywhere')}
          onDone={onDone}
          onCancel={() => setConfirming(false)}
        >
          <p>You will need to sign in again here too.</p>
        </Confirm>
      )}
    </section>
  );
}

/** What this account did, newest first, in every organization it is a member of. */
function YourActivity() {
  const list = usePaged<ActivityEntry>('/dashboard/api/user/activity');
  return (
    <section aria-labelledby="your-activity-heading">
      <h2 id="your-activity-heading">Your recent activity</h2>
      <p class="muted small">
        Every change made in the dashboard as you, newest first, in the organizations you are a
        member of.
      </p>
      <AuditEntries
        list={list}
        empty="You have not changed anything yet."
        by={{
          header: 'Organization',
          class: 'breakable name',
          cell: (entry) => <Link to={orgView(entry.org_id)}>{entry.org_name}</Link>,
        }}
      />
    </section>
  );
}
