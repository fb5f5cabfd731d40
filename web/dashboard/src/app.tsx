// The signed-in shell: who you are, which organization, the navigation, and the page.
import { useCallback, useEffect, useState } from 'preact/hooks';
import {
  api,
  ApiError,
  forgetCsrfToken,
  SESSION_ENDED,
  type OrgSummary,
  type SignedIn,
} from './api.js';
import { asApiError } from './hooks.js';
import { AppPage } from './pages/app.js';
import { AppsPage } from './pages/apps.js';
import { AuditLogPage } from './pages/audit-log.js';
import { MembersPage } from './pages/members.js';
import { ModelsPage } from './pages/models.js';
import { OverviewPage } from './pages/overview.js';
import { SignInPage } from './pages/sign-in.js';
import { navigate, signInReturnPath, useView, type View } from './router.js';
import { ErrorNote, Link, Loading } from './ui.js';

type SessionState =
  | { readonly kind: 'checking' }
  | { readonly kind: 'signed-out' }
  | { readonly kind: 'failed'; readonly error: ApiError }
  | { readonly kind: 'signed-in'; readonly session: SignedIn };

export function App() {
  const view = useView();
  const [state, setState] = useState<SessionState>({ kind: 'checking' });

  const refresh = useCallback(() => {
    api.get<SignedIn>('/auth/session').then(
      (session) => setState({ kind: 'signed-in', session }),
      (error: unknown) => {
        const failure = asApiError(error);
        setState(
          failure.code === 'gw_session_required'
            ? { kind: 'signed-out' }
            : { kind: 'failed', error: failure },
        );
      },
    );
  }, []);
  useEffect(refresh, [refresh]);
  useEffect(() => {
    const ended = () => {
      forgetCsrfToken();
      setState({ kind: 'signed-out' });
    };
    window.addEventListener(SESSION_ENDED, ended);
    return () => window.removeEventListener(SESSION_ENDED, ended);
  }, []);

  useEffect(() => {
    if (state.kind === 'signed-out' && view.page !== 'sign-in') {
      navigate({ page: 'sign-in' }, { replace: true });
    }
    if (state.kind === 'signed-in' && (view.page === 'sign-in' || view.page === 'home')) {
      // Signed in on the way to an app's OAuth request: back to its consent page.
      const back = view.page === 'sign-in' ? signInReturnPath() : null;
      if (back) {
        location.replace(back);
        return;
      }
      const { user, orgs } = state.session;
      const home = orgs.find((org) => org.id === user.personal_org_id) ?? orgs[0];
      if (home) navigate({ page: 'overview', orgId: home.id }, { replace: true });
    }
  }, [state, view]);

  useEffect(() => {
    const titles: Partial<Record<View['page'], string>> = {
      'sign-in': 'Sign in',
      overview: 'Overview',
      apps: 'Apps',
      app: 'Connections',
      members: 'Members',
      'audit-log': 'Audit log',
      models: 'Models',
    };
    document.title = `${titles[view.page] ?? 'Dashboard'} · gw`;
  }, [view.page]);

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
        <button type="button" onClick={refresh}>
          Try again
        </button>
      </main>
    );
  }
  if (state.kind === 'signed-out') {
    return (
      <SignInPage
        onSignedIn={(session) => {
          forgetCsrfToken();
          setState({ kind: 'signed-in', session });
        }}
      />
    );
  }
  return (
    <Shell
      session={state.session}
      view={view}
      onSignedOut={() => {
        forgetCsrfToken();
        setState({ kind: 'signed-out' });
      }}
    />
  );
}

function currentOrgId(view: View): string | null {
  return 'orgId' in view ? view.orgId : null;
}

function Shell(props: { session: SignedIn; view: View; onSignedOut(): void }) {
  const { session, view } = props;
  const [lastOrgId, setLastOrgId] = useState<string | null>(null);
  const viewOrgId = currentOrgId(view);
  useEffect(() => {
    if (viewOrgId) setLastOrgId(viewOrgId);
  }, [viewOrgId]);
  const orgId = viewOrgId ?? lastOrgId ?? session.user.personal_org_id;
  const org = session.orgs.find((candidate) => candidate.id === orgId);
  const [signOutError, setSignOutError] = useState<ApiError | null>(null);

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
        <span class="who" title="Signed in as">
          {session.user.email}
        </span>
        <button type="button" class="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <ErrorNote error={signOutError} />
      <div class="layout">
        {org && <Nav org={org} view={view} />}
        <main id="main" tabIndex={-1}>
          {org || !viewOrgId ? (
            <Page view={view} org={org} session={session} />
          ) : (
            <p class="error" role="alert">
              You are not a member of this organization, or it does not exist.
            </p>
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
          // stay on the same kind of page in the other organization
          const page = props.view.page;
          const target: View =
            page === 'apps' || page === 'members' || page === 'audit-log'
              ? { page, orgId }
              : { page: 'overview', orgId };
          navigate(target);
        }}
      >
        {props.orgs.map((org) => (
          <option key={org.id} value={org.id}>
            {org.name} ({org.role})
          </option>
        ))}
      </select>
    </label>
  );
}

const COMING = [
  'API keys',
  'Caps',
  'Wallet',
  'Provider credentials',
  'Product users',
  'Credit grants',
  'Usage',
  'Webhooks',
  'OAuth apps',
];

function Nav({ org, view }: { org: OrgSummary; view: View }) {
  const items: { label: string; to: View; active: boolean }[] = [
    {
      label: 'Overview',
      to: { page: 'overview', orgId: org.id },
      active: view.page === 'overview',
    },
    {
      label: 'Apps & connections',
      to: { page: 'apps', orgId: org.id },
      active: view.page === 'apps' || view.page === 'app',
    },
    { label: 'Members', to: { page: 'members', orgId: org.id }, active: view.page === 'members' },
    {
      label: 'Audit log',
      to: { page: 'audit-log', orgId: org.id },
      active: view.page === 'audit-log',
    },
    { label: 'Models & prices', to: { page: 'models' }, active: view.page === 'models' },
  ];
  return (
    <nav class="sidebar" aria-label="Dashboard">
      <ul>
        {items.map((item) => (
          <li key={item.label}>
            <Link to={item.to} current={item.active}>
              {item.label}
            </Link>
          </li>
        ))}
      </ul>
      <p class="nav-heading" id="coming-heading">
        Coming soon
      </p>
      <ul class="coming" aria-labelledby="coming-heading">
        {COMING.map((label) => (
          <li key={label} aria-disabled="true">
            {label}
          </li>
        ))}
      </ul>
    </nav>
  );
}

function Page(props: { view: View; org: OrgSummary | undefined; session: SignedIn }) {
  const { view, org } = props;
  if (view.page === 'models') return <ModelsPage />;
  if (!org) return <Loading what="your organization" />;
  switch (view.page) {
    case 'overview':
      return <OverviewPage org={org} />;
    case 'apps':
      return <AppsPage org={org} />;
    case 'app':
      return <AppPage org={org} appId={view.appId} />;
    case 'members':
      return <MembersPage org={org} session={props.session} />;
    case 'audit-log':
      return <AuditLogPage org={org} />;
    case 'home':
    case 'sign-in':
      return <Loading what="your organization" />;
    case 'not-found':
      return (
        <p class="error" role="alert">
          There is no such page.{' '}
          <Link to={{ page: 'overview', orgId: org.id }}>Go to the overview</Link>
        </p>
      );
  }
}
