// The signed-in shell: who you are, which organization, the navigation, and the page.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import {
  api,
  ApiError,
  forgetCsrfToken,
  SESSION_ENDED,
  signUpOpen,
  type OrgSummary,
  type SignedIn,
} from './api.js';
import {
  emailOn,
  ForgotPasswordPage,
  openedWith,
  ResetPasswordPage,
  UnverifiedBanner,
  useEmailVerification,
  VerificationResult,
} from './email-links.js';
import { keepFocusInPlace } from './focus-keeper.js';
import { asApiError } from './hooks.js';
import { PendingInvitations } from './invitations.js';
import { landingOrgId, usableReturnPath } from './landing.js';
import { ReviewAfterResetBanner } from './made-recently.js';
import { lastUsedOrg, rememberLastUsedOrg } from './last-org.js';
import { AccountPage } from './pages/account.js';
import { orgPageOf, orgPages } from './pages/index.js';
import { ModelsPage } from './pages/models.js';
import { SignInPage } from './pages/sign-in.js';
import {
  hrefOf,
  navigate,
  navigateToPath,
  navigateToSignIn,
  orgView,
  signInReturnPath,
  useView,
  type View,
} from './router.js';
import { ErrorNote, Link, Loading, PageHeader, Url } from './ui.js';

type SessionState =
  | { readonly kind: 'checking' }
  | { readonly kind: 'signed-out' }
  | { readonly kind: 'failed'; readonly error: ApiError }
  | { readonly kind: 'signed-in'; readonly session: SignedIn };

export function App() {
  const view = useView();
  const [state, setState] = useState<SessionState>({ kind: 'checking' });
  /** The token of the password-reset link the page was opened from, until it is used. */
  const [resetToken, setResetToken] = useState(openedWith.passwordReset);

  /** Which read of the session is the latest: only its answer is taken. */
  const latestRead = useRef(0);
  /** Sets the session's state here (signed in or out): any read still on its way is stale. */
  const settle = useCallback((next: SessionState) => {
    latestRead.current++;
    setState(next);
  }, []);
  /**
   * Reads the session again (sign-in, the organizations changed, the address was verified);
   * settles once it has. Reads may overlap (the first one and a verification's): an earlier
   * read answering last does not put its older session back.
   */
  const refresh = useCallback(() => {
    const read = ++latestRead.current;
    return api.get<SignedIn>('/auth/session').then(
      (session) => {
        if (read === latestRead.current) setState({ kind: 'signed-in', session });
      },
      (error: unknown) => {
        if (read !== latestRead.current) return;
        const failure = asApiError(error);
        setState(
          failure.code === 'gw_session_required'
            ? { kind: 'signed-out' }
            : { kind: 'failed', error: failure },
        );
      },
    );
  }, []);
  useEffect(() => {
    void refresh();
  }, [refresh]);
  useEffect(() => {
    const ended = () => {
      forgetCsrfToken();
      settle({ kind: 'signed-out' });
    };
    window.addEventListener(SESSION_ENDED, ended);
    return () => window.removeEventListener(SESSION_ENDED, ended);
  }, []);

  const signingUp = view.page === 'sign-up' && signUpOpen();
  const forgotPassword = view.page === 'forgot-password' && emailOn();
  useEffect(() => {
    if (resetToken !== null) return;
    if (state.kind === 'signed-out' && view.page !== 'sign-in' && !signingUp && !forgotPassword) {
      navigateToSignIn();
    }
    const signPage =
      view.page === 'sign-in' || view.page === 'sign-up' || view.page === 'forgot-password';
    if (state.kind === 'signed-in' && (signPage || view.page === 'home')) {
      // Back to the page opened while signed out, or to an app's OAuth consent page (not to an
      // organization of someone else's: a link a previous user's session left).
      const back = signPage ? usableReturnPath(signInReturnPath(), state.session) : null;
      if (back?.startsWith('/dashboard/')) {
        navigateToPath(back);
        return;
      }
      if (back) {
        location.replace(back);
        return;
      }
      const home = landingOrgId(state.session, lastUsedOrg(state.session.user.id));
      if (home) navigate(orgView(home), { replace: true });
    }
  }, [state, view, resetToken]);

  useEffect(() => {
    const titles: Record<Exclude<View['page'], 'org'>, string> = {
      'sign-in': 'Sign in',
      'sign-up': 'Create an account',
      'forgot-password': 'Reset your password',
      models: 'Models & prices',
      account: 'Your account',
      home: 'Dashboard',
      'not-found': 'Not found',
    };
    const title = view.page === 'org' ? orgPageOf(view.section)?.label : titles[view.page];
    document.title = `${title ?? 'Not found'} · gw`;
  }, [view]);

  const verified = useEmailVerification(() => void refresh());
  const verification = <VerificationResult state={verified} />;
  if (resetToken !== null) {
    return (
      <ResetPasswordPage
        token={resetToken}
        onDone={() => {
          // the reset ended every session of the account, this browser's too if it had one
          setResetToken(null);
          forgetCsrfToken();
          navigateToSignIn('sign-in', { comeBack: false });
          settle({ kind: 'signed-out' });
        }}
      />
    );
  }
  if (state.kind === 'checking') {
    return (
      <main class="center">
        <Loading what="your session" />
      </main>
    );
  }
  if (state.kind === 'failed') {
    return (
      <main class="center">
        <ErrorNote error={state.error} />
        <button type="button" onClick={() => void refresh()}>
          Try again
        </button>
      </main>
    );
  }
  if (state.kind === 'signed-out') {
    if (forgotPassword) return <ForgotPasswordPage />;
    return (
      <>
        {verification}
        <SignInPage
          mode={signingUp ? 'sign-up' : 'sign-in'}
          onSignedIn={(session) => {
            forgetCsrfToken();
            settle({ kind: 'signed-in', session });
          }}
        />
      </>
    );
  }
  return (
    <Shell
      verification={verification}
      session={state.session}
      view={view}
      onJoined={(orgId) => {
        // the organization joined is in the session once it is read again; then open it
        void refresh().then(() => navigate(orgView(orgId)));
      }}
      onSignedOut={() => {
        forgetCsrfToken();
        // signed out on purpose: the next one to sign in here starts afresh, not on this page
        navigateToSignIn('sign-in', { comeBack: false });
        settle({ kind: 'signed-out' });
      }}
    />
  );
}

function currentOrgId(view: View): string | null {
  return view.page === 'org' ? view.orgId : null;
}

/**
 * After a navigation inside the app, focus moves to the new page's heading (or the main area
 * until it renders), so keyboard and screen-reader users start on the page they opened.
 */
function useFocusOnNavigation(view: View): void {
  const href = hrefOf(view);
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    const frame = requestAnimationFrame(() => {
      const target =
        document.querySelector<HTMLElement>('#main h1') ?? document.getElementById('main');
      target?.focus();
    });
    return () => cancelAnimationFrame(frame);
  }, [href]);
}

function Shell(props: {
  session: SignedIn;
  view: View;
  /** How following an e-mail verification link went, if the page was opened from one. */
  verification: ComponentChildren;
  onJoined(orgId: string): void;
  onSignedOut(): void;
}) {
  const { session, view } = props;
  const [lastOrgId, setLastOrgId] = useState<string | null>(null);
  const viewOrgId = currentOrgId(view);
  useEffect(() => {
    if (viewOrgId) setLastOrgId(viewOrgId);
  }, [viewOrgId]);
  const homeOrgId = landingOrgId(session, lastUsedOrg(session.user.id));
  const orgId = viewOrgId ?? lastOrgId ?? homeOrgId;
  const org = session.orgs.find((candidate) => candidate.id === orgId);
  useEffect(() => {
    if (org) rememberLastUsedOrg(session.user.id, org.id);
  }, [org?.id]);
  // an organization the user is not a member of: the page says so, the navigation is their own
  const homeOrg = session.orgs.find((candidate) => candidate.id === homeOrgId);
  const navOrg = org ?? homeOrg;
  const [signOutError, setSignOutError] = useState<ApiError | null>(null);
  useFocusOnNavigation(view);
  const main = useRef<HTMLElement>(null);
  useEffect(() => (main.current ? keepFocusInPlace(main.current) : undefined), []);

  const signOut = () => {
    api.post('/auth/logout').then(props.onSignedOut, (error: unknown) => {
      const failure = asApiError(error);
      if (failure.code === 'gw_session_required') props.onSignedOut();
      else setSignOutError(failure);
    });
  };

  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">gw</span>
        <OrgSwitcher orgs={session.orgs} currentId={org?.id ?? ''} view={view} />
        <Link
          to={{ page: 'account' }}
          class="who"
          current={view.page === 'account'}
          title={session.user.email}
        >
          <span class="visually-hidden">Your account: </span>
          {session.user.email}
        </Link>
        <button type="button" class="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <ErrorNote error={signOutError} />
      <div class="layout">
        {navOrg && <Nav org={navOrg} view={view} />}
        <main id="main" tabIndex={-1} ref={main}>
          {props.verification}
          <UnverifiedBanner session={session} />
          <ReviewAfterResetBanner session={session} onAccountPage={view.page === 'account'} />
          {/* read again once the address is verified: none are listed before (decision 411) */}
          <PendingInvitations key={String(session.user.email_verified)} onJoined={props.onJoined} />
          {org || !viewOrgId ? (
            <Page view={view} org={org} session={session} onSignedOut={props.onSignedOut} />
          ) : (
            <NotAMember orgs={session.orgs} />
          )}
        </main>
      </div>
    </div>
  );
}

function OrgSwitcher(props: { orgs: readonly OrgSummary[]; currentId: string; view: View }) {
  return (
    <label class="org-switcher">
      <span>Organization</span>
      <select
        value={props.currentId}
        onChange={(event) => {
          const orgId = event.currentTarget.value;
          // the same page in the other organization (its list, not this one's object)
          const section = props.view.page === 'org' ? props.view.section : '';
          const target = orgView(orgId, orgPageOf(section) ? section : '');
          navigate(target);
        }}
      >
        {!props.orgs.some((org) => org.id === props.currentId) && (
          <option value={props.currentId} disabled>
            Choose an organization
          </option>
        )}
        {props.orgs.map((org) => (
          <option key={org.id} value={org.id}>
            {org.name} ({org.role})
          </option>
        ))}
      </select>
    </label>
  );
}

function Nav({ org, view }: { org: OrgSummary; view: View }) {
  // another organization's page (one the user is not a member of) highlights nothing here
  const section = view.page === 'org' && view.orgId === org.id ? view.section : null;
  const item = (label: string, to: View, active: boolean, soon = false) => (
    <li key={label}>
      <Link to={to} current={active}>
        {label}
        {soon && <span class="badge">soon</span>}
      </Link>
    </li>
  );
  const coming = orgPages.filter((page) => page.notYetAvailable);
  return (
    <nav class="sidebar" aria-label="Dashboard">
      <ul>
        {orgPages
          .filter((page) => !page.notYetAvailable)
          .map((page) => item(page.label, orgView(org.id, page.section), section === page.section))}
        {item('Models & prices', { page: 'models' }, view.page === 'models')}
        {item('Your account', { page: 'account' }, view.page === 'account')}
      </ul>
      {coming.length > 0 && (
        <>
          <p class="nav-heading" id="coming-heading">
            Coming soon
          </p>
          <ul class="coming" aria-labelledby="coming-heading">
            {coming.map((page) =>
              item(page.label, orgView(org.id, page.section), section === page.section, true),
            )}
          </ul>
        </>
      )}
    </nav>
  );
}

function Page(props: {
  view: View;
  org: OrgSummary | undefined;
  session: SignedIn;
  onSignedOut(): void;
}) {
  const { view, org } = props;
  if (view.page === 'models') return <ModelsPage />;
  if (view.page === 'account') {
    return <AccountPage session={props.session} onSignedOutEverywhere={props.onSignedOut} />;
  }
  if (!org) return <Loading what="your organization" />;
  const page = view.page === 'org' ? orgPageOf(view.section) : undefined;
  if (view.page !== 'org' || !page) {
    if (
      view.page === 'home' ||
      view.page === 'sign-in' ||
      view.page === 'sign-up' ||
      view.page === 'forgot-password'
    ) {
      return <Loading what="your organization" />;
    }
    return <NotFound orgId={org.id} />;
  }
  return (
    <page.Component
      key={`${org.id}/${view.section}`}
      org={org}
      session={props.session}
      id={view.id}
    />
  );
}

function NotAMember({ orgs }: { orgs: readonly OrgSummary[] }) {
  return (
    <>
      <PageHeader title="Organization not available">
        You are not a member of this organization, or it does not exist. A member who manages it can
        invite you.
      </PageHeader>
      {orgs.length > 0 ? (
        <>
          <h2>Your organizations</h2>
          <ul class="org-list">
            {orgs.map((org) => (
              <li key={org.id}>
                <Link to={orgView(org.id)}>{org.name}</Link>{' '}
                <span class="muted small">({org.role})</span>
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p>You are not a member of any organization yet.</p>
      )}
    </>
  );
}

function NotFound({ orgId }: { orgId: string }) {
  return (
    <>
      <PageHeader title="Page not found">
        The dashboard has no page at <Url value={location.pathname} />.
      </PageHeader>
      <p>
        <Link to={orgView(orgId)}>Go to the overview</Link>
      </p>
    </>
  );
}
