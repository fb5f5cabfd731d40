// The dashboard's single page: GET /dashboard/ and every deep link of the app under it
// (/dashboard/orgs/…, /dashboard/models, …) answer the same HTML, never cached, with a strict
// Content-Security-Policy (scripts, styles and requests only from the gateway itself). Where
// self-service sign-up is on, the page says so in a <meta name="gw-sign-up"> (the signed-out
// app has no other way to know whether to offer it), and where gw sends e-mail in a
// <meta name="gw-email"> (its sign-in page then offers "forgot password"). Any other GET under /dashboard/ but the
// `api` and `assets` namespaces answers the page too: 200 where the app has a page of that
// shape, 404 where it has none (the app then shows its own not-found page), so a mistyped
// link or a trailing slash still opens the dashboard (docs/decisions.md 291).
import { gwError, type GwError } from '../../errors.js';
import type { HttpResponse } from '../../http/types.js';
import { declareRoute } from '../framework/declaration.js';
import type { DashboardBundle } from './bundle.js';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const pageHeaders = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
} as const;

interface PageDeps {
  readonly dashboardBundle: DashboardBundle;
  readonly accounts: { readonly signup: boolean; readonly mail: unknown };
}

const SIGN_UP_META = '<meta name="gw-sign-up" content="open" />\n  ';
/** gw sends e-mail (decision 370): the sign-in page offers "forgot password". */
const EMAIL_META = '<meta name="gw-email" content="on" />\n  ';
/** The page with its flags, made once per bundle and set of flags. */
const flaggedPages = new WeakMap<Buffer, Map<string, Buffer>>();

function pageHtml(html: Buffer, signUp: boolean, email: boolean): Buffer {
  const metas = (signUp ? SIGN_UP_META : '') + (email ? EMAIL_META : '');
  if (metas === '') return html;
  let pages = flaggedPages.get(html);
  if (!pages) {
    pages = new Map();
    flaggedPages.set(html, pages);
  }
  let flagged = pages.get(metas);
  if (!flagged) {
    const at = html.indexOf('</head>');
    flagged =
      at < 0 ? html : Buffer.concat([html.subarray(0, at), Buffer.from(metas), html.subarray(at)]);
    pages.set(metas, flagged);
  }
  return flagged;
}

function sendPage(response: HttpResponse, deps: PageDeps, status = 200): GwError | undefined {
  const html = deps.dashboardBundle.html;
  if (!html) return gwError('gw_not_found', 'the dashboard is not built: run `npm run build`');
  response.writeHead(status, pageHeaders);
  response.end(pageHtml(html, deps.accounts.signup, deps.accounts.mail !== null));
  return undefined;
}

const pageRoute = (path: string, summary: string) =>
  declareRoute({
    method: 'GET',
    path,
    summary,
    caller: { kind: 'none' },
    undocumented: true,
    responses: { 200: { description: 'the dashboard page' } },
    errors: ['gw_not_found'],
    handler: ({ response }, deps: PageDeps) => sendPage(response, deps),
  });

export const dashboardPageRoute = pageRoute('/dashboard/', 'The dashboard web app');
export const dashboardModelsPageRoute = pageRoute('/dashboard/models', 'Dashboard: models page');
export const dashboardSignInPageRoute = pageRoute('/dashboard/sign-in', 'Dashboard: sign-in');
/** The namespaces under /dashboard/ that are not the app's pages. */
const NOT_PAGES = new Set(['api', 'assets']);
/** The one-segment pages of the app (`orgs` alone is its home: your organizations). */
const NAMED_PAGES = new Set(['sign-in', 'sign-up', 'forgot-password', 'models', 'account', 'orgs']);

/**
 * What /dashboard/<rest> is to the app: one of its pages, a path it shows as not found, or a
 * path of the API's or the assets' namespace (no page at all). The shapes are those of
 * parseView in web/dashboard/src/views.ts (test/dashboard-page-paths.test.ts holds the two
 * together); an organization's sections are the app's to know, so any
 * /dashboard/orgs/<org>[/<section>[/<id>]] is a page here.
 */
export function dashboardPathKind(rest: string): 'page' | 'not-found' | 'not-a-page' {
  const raw = rest.split('/').filter(Boolean);
  let parts: string[];
  try {
    parts = raw.map(decodeURIComponent);
  } catch {
    return NOT_PAGES.has(raw[0]!) ? 'not-a-page' : 'not-found';
  }
  if (parts.length === 0) return 'page';
  if (NOT_PAGES.has(parts[0]!)) return 'not-a-page';
  if (parts.length === 1) return NAMED_PAGES.has(parts[0]!) ? 'page' : 'not-found';
  return parts[0] === 'orgs' && parts.length <= 4 ? 'page' : 'not-found';
}

export const dashboardPagesRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/{page*}',
  summary: 'Dashboard: any other path under /dashboard/ (deep links; not found: the app says so)',
  caller: { kind: 'none' },
  undocumented: true,
  // Only what no other route takes, and only GET: a write to an unknown /dashboard/api/ path
  // is a 404, not a 405 naming GET.
  fallback: true,
  responses: {
    200: { description: 'the dashboard page' },
    404: { description: 'the dashboard page, which shows its not-found view' },
  },
  errors: ['gw_not_found', 'gw_route_not_found'],
  handler({ request, response }, deps: PageDeps) {
    const kind = dashboardPathKind(request.path.slice('/dashboard/'.length));
    // The API's and the assets' unknown paths answer as any unknown path does (JSON).
    if (kind === 'not-a-page') {
      return gwError('gw_route_not_found', `no route for GET ${request.path}`);
    }
    return sendPage(response, deps, kind === 'page' ? 200 : 404);
  },
});

/** /dashboard without the slash: the app's relative asset paths need the slash. */
export const dashboardRedirectRoute = declareRoute({
  method: 'GET',
  path: '/dashboard',
  summary: 'Redirects to /dashboard/',
  caller: { kind: 'none' },
  undocumented: true,
  responses: { 308: { description: 'to /dashboard/' } },
  handler({ response }) {
    response.writeHead(308, { location: '/dashboard/', 'cache-control': 'no-store' });
    response.end();
  },
});
