// The dashboard's pages as paths under /dashboard/, read and written without the browser (no
// preact, no DOM): the app's router (router.ts) uses them, and the gateway's reading of the
// same paths (dashboardPathKind in src/routes/dashboard-ui/page.ts) is tested against them.
// An organization's pages are /dashboard/orgs/<org>/<section>[/<id>]: the section names a page
// of the registry (pages/index.ts), the id an object it shows (an app, a connection's keys, a
// product user).
export type View =
  | { readonly page: 'home' }
  | { readonly page: 'sign-in' }
  | { readonly page: 'sign-up' }
  /** "Forgot password?": asks for a reset link by e-mail (where the gateway sends any). */
  | { readonly page: 'forgot-password' }
  | { readonly page: 'models' }
  /** The signed-in user's own: password, sessions. */
  | { readonly page: 'account' }
  | { readonly page: 'not-found' }
  | {
      readonly page: 'org';
      readonly orgId: string;
      /** '' is the overview. */
      readonly section: string;
      readonly id?: string;
    };

export type OrgView = Extract<View, { page: 'org' }>;

/** An organization's page: `orgView(org, 'apps', appId)`. */
export const orgView = (orgId: string, section = '', id?: string): OrgView => ({
  page: 'org',
  orgId,
  section,
  ...(id !== undefined && { id }),
});

export const BASE = '/dashboard';

export function parseView(pathname: string): View {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  let parts: string[];
  try {
    parts = rest.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return { page: 'not-found' };
  }
  if (parts.length === 0) return { page: 'home' };
  if (parts.length === 1 && parts[0] === 'sign-in') return { page: 'sign-in' };
  if (parts.length === 1 && parts[0] === 'sign-up') return { page: 'sign-up' };
  if (parts.length === 1 && parts[0] === 'forgot-password') return { page: 'forgot-password' };
  if (parts.length === 1 && parts[0] === 'models') return { page: 'models' };
  if (parts.length === 1 && parts[0] === 'account') return { page: 'account' };
  // /dashboard/orgs/ (a link trimmed to its organizations): home, your organization
  if (parts.length === 1 && parts[0] === 'orgs') return { page: 'home' };
  const [orgs, orgId, section = '', id] = parts;
  if (orgs !== 'orgs' || !orgId || parts.length > 4) return { page: 'not-found' };
  return orgView(orgId, section, id);
}

export function hrefOf(view: View): string {
  switch (view.page) {
    case 'home':
    case 'not-found':
      return `${BASE}/`;
    case 'sign-in':
      return `${BASE}/sign-in`;
    case 'sign-up':
      return `${BASE}/sign-up`;
    case 'forgot-password':
      return `${BASE}/forgot-password`;
    case 'models':
      return `${BASE}/models`;
    case 'account':
      return `${BASE}/account`;
    case 'org':
      return [BASE, 'orgs', view.orgId, view.section, view.id]
        .filter((part): part is string => Boolean(part))
        .map((part, index) => (index === 0 ? part : encodeURIComponent(part)))
        .join('/');
  }
}
