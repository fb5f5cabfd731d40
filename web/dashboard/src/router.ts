// The dashboard's pages as paths under /dashboard/ (real links: they can be bookmarked, opened
// in a new tab and shared; the gateway answers each with the app's page). An organization's
// pages are /dashboard/orgs/<org>/<section>[/<id>]: the section names a page of the registry
// (pages/index.ts), the id an object it shows (an app, a connection's keys, a product user).
import { useEffect, useState } from 'preact/hooks';

export type View =
  | { readonly page: 'home' }
  | { readonly page: 'sign-in' }
  | { readonly page: 'sign-up' }
  | { readonly page: 'models' }
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

const BASE = '/dashboard';

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
  if (parts.length === 1 && parts[0] === 'models') return { page: 'models' };
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
    case 'models':
      return `${BASE}/models`;
    case 'org':
      return [BASE, 'orgs', view.orgId, view.section, view.id]
        .filter((part): part is string => Boolean(part))
        .map((part, index) => (index === 0 ? part : encodeURIComponent(part)))
        .join('/');
  }
}

/**
 * Where the sign-in page sends the user once signed in, from its `?next=`: back to a page of
 * the dashboard (a deep link opened while signed out) or to an OAuth authorization request of
 * this gateway (an app asked the user to connect), never elsewhere (no open redirect: a path
 * of this origin only).
 */
export function signInReturnPath(): string | null {
  const next = new URLSearchParams(location.search).get('next');
  if (next === null) return null;
  if (next.startsWith('/oauth/authorize?')) return next;
  return next.startsWith(`${BASE}/`) && !next.startsWith(`${BASE}/sign-`) ? next : null;
}

/** The sign-in (or sign-up) page, remembering the page the user opened (see signInReturnPath). */
export function navigateToSignIn(page: 'sign-in' | 'sign-up' = 'sign-in'): void {
  const here = `${location.pathname}${location.search}`;
  const next =
    parseView(location.pathname).page === 'home' || location.pathname.startsWith(`${BASE}/sign-`)
      ? new URLSearchParams(location.search).get('next')
      : here;
  const query = next ? `?next=${encodeURIComponent(next)}` : '';
  history.replaceState(null, '', `${BASE}/${page}${query}`);
  window.dispatchEvent(new Event(NAVIGATED));
}

/** Opens a path of the dashboard (with its query) in the app. */
export function navigateToPath(path: string): void {
  history.replaceState(null, '', path);
  window.dispatchEvent(new Event(NAVIGATED));
}

const NAVIGATED = 'gw:navigated';

export function navigate(view: View, options: { replace?: boolean } = {}): void {
  const href = hrefOf(view);
  if (href !== location.pathname) {
    if (options.replace) history.replaceState(null, '', href);
    else history.pushState(null, '', href);
  }
  window.dispatchEvent(new Event(NAVIGATED));
}

/** The current view, following links, back and forward. */
export function useView(): View {
  const [view, setView] = useState(() => parseView(location.pathname));
  useEffect(() => {
    const update = () => setView(parseView(location.pathname));
    window.addEventListener('popstate', update);
    window.addEventListener(NAVIGATED, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(NAVIGATED, update);
    };
  }, []);
  return view;
}
