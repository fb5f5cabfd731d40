// The dashboard's single page: GET /dashboard/ and every deep link of the app under it
// (/dashboard/orgs/…, /dashboard/models, …) answer the same HTML, never cached, with a strict
// Content-Security-Policy (scripts, styles and requests only from the gateway itself). Where
// self-service sign-up is on, the page says so in a <meta name="gw-sign-up"> (the signed-out
// app has no other way to know whether to offer it). /dashboard/<name> answers the page for any
// name but `api` and `assets`: the app shows its own not-found page for one it does not know.
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
  readonly accounts: { readonly signup: boolean };
}

const SIGN_UP_META = Buffer.from('<meta name="gw-sign-up" content="open" />\n  </head>');
/** The page with the sign-up flag, made once per bundle. */
const withSignUp = new WeakMap<Buffer, Buffer>();

function pageHtml(html: Buffer, signUp: boolean): Buffer {
  if (!signUp) return html;
  let flagged = withSignUp.get(html);
  if (!flagged) {
    const at = html.indexOf('</head>');
    flagged =
      at < 0
        ? html
        : Buffer.concat([html.subarray(0, at), SIGN_UP_META, html.subarray(at + '</head>'.length)]);
    withSignUp.set(html, flagged);
  }
  return flagged;
}

function sendPage(response: HttpResponse, deps: PageDeps): GwError | undefined {
  const html = deps.dashboardBundle.html;
  if (!html) return gwError('gw_not_found', 'the dashboard is not built: run `npm run build`');
  response.writeHead(200, pageHeaders);
  response.end(pageHtml(html, deps.accounts.signup));
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

export const dashboardNamedPageRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/{page}',
  summary: 'Dashboard: a page by name (sign-up, or one the app shows as not found)',
  caller: { kind: 'none' },
  undocumented: true,
  responses: { 200: { description: 'the dashboard page' } },
  errors: ['gw_not_found'],
  handler: ({ params, response }, deps: PageDeps) =>
    NOT_PAGES.has(params.page!)
      ? gwError('gw_not_found', `no route for GET /dashboard/${params.page}`)
      : sendPage(response, deps),
});
export const dashboardOrgPagesRoute = pageRoute(
  '/dashboard/orgs/{page*}',
  "Dashboard: an organization's pages (deep links)",
);

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
