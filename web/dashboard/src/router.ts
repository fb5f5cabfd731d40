// The dashboard's pages as paths under /dashboard/ (real links: they can be bookmarked, opened
// in a new tab and shared; the gateway answers each with the app's page).
import { useEffect, useState } from 'preact/hooks';

export type View =
  | { readonly page: 'home' }
  | { readonly page: 'sign-in' }
  | { readonly page: 'models' }
  | { readonly page: 'overview'; readonly orgId: string }
  | { readonly page: 'apps'; readonly orgId: string }
  | { readonly page: 'app'; readonly orgId: string; readonly appId: string }
  | { readonly page: 'members'; readonly orgId: string }
  | { readonly page: 'audit-log'; readonly orgId: string }
  | { readonly page: 'not-found' };

const BASE = '/dashboard';

export function parseView(pathname: string): View {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  const parts = rest.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { page: 'home' };
  if (parts.length === 1 && parts[0] === 'sign-in') return { page: 'sign-in' };
  if (parts.length === 1 && parts[0] === 'models') return { page: 'models' };
  const [orgs, orgId, section, id] = parts;
  if (orgs !== 'orgs' || !orgId) return { page: 'not-found' };
  if (!section) return { page: 'overview', orgId };
  if (section === 'apps' && id && parts.length === 4) return { page: 'app', orgId, appId: id };
  if (parts.length !== 3) return { page: 'not-found' };
  if (section === 'apps') return { page: 'apps', orgId };
  if (section === 'members') return { page: 'members', orgId };
  if (section === 'audit-log') return { page: 'audit-log', orgId };
  return { page: 'not-found' };
}

export function hrefOf(view: View): string {
  const org = (orgId: string) => `${BASE}/orgs/${encodeURIComponent(orgId)}`;
  switch (view.page) {
    case 'home':
    case 'not-found':
      return `${BASE}/`;
    case 'sign-in':
      return `${BASE}/sign-in`;
    case 'models':
      return `${BASE}/models`;
    case 'overview':
      return org(view.orgId);
    case 'apps':
      return `${org(view.orgId)}/apps`;
    case 'app':
      return `${org(view.orgId)}/apps/${encodeURIComponent(view.appId)}`;
    case 'members':
      return `${org(view.orgId)}/members`;
    case 'audit-log':
      return `${org(view.orgId)}/audit-log`;
  }
}

/**
 * Where the sign-in page sends the user once signed in, from its `?next=`: only back to an
 * OAuth authorization request of this gateway (an app asked the user to connect), never
 * elsewhere (no open redirect).
 */
export function signInReturnPath(): string | null {
  const next = new URLSearchParams(location.search).get('next');
  return next !== null && next.startsWith('/oauth/authorize?') ? next : null;
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
