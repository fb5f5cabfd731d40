// The dashboard's pages as real links (they can be bookmarked, opened in a new tab and shared;
// the gateway answers each with the app's page): the current view, following links, back and
// forward, and the way back from the sign-in page. The paths themselves are views.ts's.
import { useEffect, useState } from 'preact/hooks';
import { BASE, hrefOf, parseView, type View } from './views.js';

export { hrefOf, orgView, parseView, type OrgView, type View } from './views.js';

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

/**
 * The sign-in (or sign-up) page, remembering the page the user opened (see signInReturnPath),
 * unless `comeBack` is false (the user signed out: whoever signs in next starts afresh).
 */
export function navigateToSignIn(
  page: 'sign-in' | 'sign-up' = 'sign-in',
  options: { comeBack?: boolean } = {},
): void {
  const here = `${location.pathname}${location.search}`;
  const next =
    options.comeBack === false
      ? null
      : parseView(location.pathname).page === 'home' ||
          location.pathname.startsWith(`${BASE}/sign-`)
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
