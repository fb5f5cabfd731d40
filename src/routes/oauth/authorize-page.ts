// GET /oauth/authorize: the authorization request of an app (RFC 6749 section 4.1.1, PKCE S256
// required). An unknown client or an unregistered redirect URI gets an error page (or JSON
// gw_redirect_uri_mismatch), never a redirect; other problems get a page with a link back to
// the app's redirect URI carrying `error=…` (or JSON gw_invalid_request), never an automatic
// redirect either (RFC 9700 section 4.11.2). A visitor without a dashboard session is sent to the sign-in page, which
// brings them back here; a signed-in user gets the consent page.
import { z } from 'zod';
import { gwError } from '../../errors.js';
import { acceptsHtml, pageHeaders } from '../../http/html.js';
import type { HttpResponse } from '../../http/types.js';
import type { DashboardCaller } from '../../accounts/dashboard-auth.js';
import {
  authorizationParamsOfQuery,
  checkAuthorizationRequest,
  type ValidAuthorization,
} from '../../oauth/authorization-request.js';
import {
  CONSENT_PAGE_SCRIPT,
  renderConsentPage,
  renderRequestErrorPage,
  type ConsentPage,
} from '../../oauth/consent-page.js';
import { issuerOf } from '../../oauth/issuer.js';
import { existingConnections, payingOrgsOf } from '../../oauth/connections.js';
import { formActionSource } from '../../oauth/redirect-uris.js';
import { declareRoute } from '../framework/declaration.js';
import { pageOrJson, type OAuthDeps } from './deps.js';

export const SIGN_IN_PAGE = '/dashboard/sign-in';

export const authorizationQuerySchema = z.object({
  response_type: z.literal('code'),
  client_id: z.string().describe('gw_client_… of the app'),
  redirect_uri: z.string().describe('exactly one of the URIs registered for the client'),
  state: z.string().optional().describe('echoed back to the redirect URI'),
  code_challenge: z.string().describe('base64url SHA-256 of the code verifier (43 characters)'),
  code_challenge_method: z.literal('S256'),
});

export const authorizePageRoute = declareRoute({
  method: 'GET',
  path: '/oauth/authorize',
  summary:
    'OAuth authorization request (code flow with PKCE S256): the consent page, or the sign-in page first; a bad parameter gets a page linking back to the app with the error, never a redirect',
  caller: { kind: 'optional_session' },
  query: authorizationQuerySchema,
  // RFC 6749 section 3.1: unrecognised parameters are ignored. The handler reads the query
  // itself: a repeated or bad parameter gets the page back to the app, not a plain 400.
  unknownQueryParameters: 'ignored',
  responses: {
    200: { description: 'the consent page (HTML)' },
    302: { description: 'to the sign-in page (no session)' },
  },
  errors: ['gw_redirect_uri_mismatch', 'gw_invalid_request'],
  errorFlavor: pageOrJson,
  async handler({ request, caller, response }, deps: OAuthDeps) {
    const { params, repeated } = authorizationParamsOfQuery(request.query);
    const issuer = issuerOf(deps.oauth.issuer, request.headers);
    const check = await checkAuthorizationRequest(deps.oauth.db, issuer, params, repeated);
    if (check.kind === 'refused') {
      return check.error;
    }
    if (check.kind === 'redirect') {
      if (!acceptsHtml(request.headers)) return gwError('gw_invalid_request', check.description);
      response.annotate({ errorCode: 'gw_invalid_request' });
      response.writeHead(400, pageHeaders());
      response.end(
        renderRequestErrorPage({
          appName: check.client.appName,
          redirectUri: check.redirectUri,
          description: check.description,
          location: check.location,
        }),
      );
      return;
    }
    if (!caller) {
      const back = `${request.path}?${request.query}`;
      return redirect(response, `${SIGN_IN_PAGE}?next=${encodeURIComponent(back)}`);
    }
    await answerConsentPage(response, deps, caller, check.request);
  },
});

export function redirect(response: HttpResponse, location: string): void {
  response.writeHead(302, {
    location,
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  });
  response.end();
}

/**
 * The consent page for a signed-in user (200), or sent back with a problem in its form (400):
 * the organizations they may have pay, their personal one first, and where the app is
 * already connected among them.
 */
export async function answerConsentPage(
  response: HttpResponse,
  deps: OAuthDeps,
  caller: DashboardCaller,
  request: ValidAuthorization,
  resubmitted?: ConsentPage['resubmitted'],
): Promise<void> {
  const payingOrgs = payingOrgsOf(caller.user.memberships).sort(
    (a, b) =>
      Number(b.id === caller.user.personalOrgId) - Number(a.id === caller.user.personalOrgId),
  );
  const existing = await existingConnections(
    deps.oauth.db,
    request.client.clientId,
    payingOrgs.map((org) => org.id),
  );
  const page = renderConsentPage({
    request,
    userEmail: caller.user.email,
    payingOrgs,
    csrfToken: caller.session.csrfToken,
    existing,
    ...(resubmitted && { resubmitted }),
  });
  response.writeHead(
    resubmitted ? 400 : 200,
    pageHeaders([formActionSource(request.redirectUri)], [CONSENT_PAGE_SCRIPT]),
  );
  response.end(page);
}
