// POST /oauth/authorize (form-encoded, from the consent page): the user's answer. The request
// is checked again as on the page; the session's CSRF token comes in the form and the Origin
// must be the gateway's. Approval, in an organization where the user may connect apps (the
// role that issues API keys), answers 302 to the redirect URI with a single-use code and the
// state (the code's exchange makes the app connection, with the monthly cap the user gave it:
// decision 415); denial answers 302 with error=access_denied. Both carry the gateway's issuer
// as `iss` (RFC 9207). A cap that is not an amount gets the consent page back (400), naming
// the problem, or the JSON error.
import { z } from 'zod';
import { APP_CONNECTING_ROLE, roleAtLeast } from '../../accounts/users.js';
import { checkCapSettings } from '../../admin/caps.js';
import { gwError, isGwError, type GwError } from '../../errors.js';
import { acceptsHtml } from '../../http/html.js';
import { parseAmountField, SETTLEMENT_CURRENCY } from '../../money.js';
import { answerLocation, checkAuthorizationRequest } from '../../oauth/authorization-request.js';
import { approve } from '../../oauth/connections.js';
import { issuerOf } from '../../oauth/issuer.js';
import { declareRoute } from '../framework/declaration.js';
import { CAP_AMOUNT_FIELD } from '../../oauth/consent-page.js';
import { capRefusal } from '../dashboard/caps/schema.js';
import { amountInput } from '../dashboard/schemas.js';
import { answerConsentPage, redirect } from './authorize-page.js';
import { pageOrJson, type OAuthDeps } from './deps.js';

/** Generous bounds: the request's own checks give the precise answers. */
const parameter = z.string().max(4096).optional();

const decisionSchema = z.object({
  response_type: parameter,
  client_id: parameter,
  redirect_uri: parameter,
  state: parameter,
  code_challenge: parameter,
  code_challenge_method: parameter,
  org_id: parameter.describe(
    'the organization whose wallet pays (one where you are an admin or owner)',
  ),
  decision: parameter.describe('approve or deny'),
  [CAP_AMOUNT_FIELD]: amountInput
    .optional()
    .describe(
      'monthly spending cap of the connection, USD, as a decimal amount (empty or left out: none); its app-connection cap',
    ),
  csrf_token: parameter.describe("the session's CSRF token (GET /auth/csrf)"),
});

export const authorizeDecisionRoute = declareRoute({
  method: 'POST',
  path: '/oauth/authorize',
  summary:
    "The user's answer on the consent page: 302 to the redirect URI with a code, or access_denied",
  caller: { kind: 'session', csrf: 'form' },
  body: decisionSchema,
  bodyEncoding: 'form',
  responses: {
    302: { description: 'to the redirect URI with code and state, or error=access_denied' },
  },
  errors: [
    'gw_redirect_uri_mismatch',
    'gw_not_found',
    'gw_role_forbidden',
    'gw_amount_out_of_range',
    'gw_unavailable',
  ],
  errorFlavor: pageOrJson,
  async handler({ request, caller, body, response }, deps: OAuthDeps) {
    const issuer = issuerOf(deps.oauth.issuer, request.headers);
    const check = await checkAuthorizationRequest(deps.oauth.db, issuer, body);
    if (check.kind === 'refused') return check.error;
    if (check.kind === 'redirect') return redirect(response, check.location);
    if (body.decision === 'deny') {
      return redirect(response, answerLocation(check.request, { error: 'access_denied' }));
    }
    if (body.decision !== 'approve') {
      return gwError('gw_invalid_request', 'decision: must be approve or deny');
    }
    const org = caller.user.memberships.find((membership) => membership.id === body.org_id);
    if (!org) {
      return gwError('gw_not_found', 'org_id: no organization with this id among yours');
    }
    if (!roleAtLeast(org.role, APP_CONNECTING_ROLE)) {
      return gwError(
        'gw_role_forbidden',
        `org_id: connecting an app to an organization's wallet needs the ${APP_CONNECTING_ROLE} role or higher there (as issuing an API key does); yours is ${org.role}`,
      );
    }
    const capAmountNano = consentCap(body[CAP_AMOUNT_FIELD]);
    if (isGwError(capAmountNano)) {
      if (!acceptsHtml(request.headers)) return capAmountNano;
      response.annotate({ errorCode: capAmountNano.code });
      return answerConsentPage(response, deps, caller, check.request, {
        orgId: org.id,
        capAmount: body[CAP_AMOUNT_FIELD] ?? '',
        problem: `Monthly spending cap: ${capAmountNano.message.replace(`${CAP_AMOUNT_FIELD}: `, '')}`,
      });
    }
    const { code } = await approve(deps.oauth.codes, {
      client: check.request.client,
      redirectUri: check.request.redirectUri,
      codeChallenge: check.request.codeChallenge,
      userId: caller.user.id,
      orgId: org.id,
      capAmountNano,
    });
    redirect(response, answerLocation(check.request, { code }));
  },
});

/**
 * The consent form's cap in nano-units (null: none), checked as every cap amount is (the
 * dashboard API's `amount`). The form has no script to trim what the user typed, as the
 * dashboard's own cap forms do before sending: the text is trimmed here, then taken as is.
 */
function consentCap(text: string | undefined): bigint | null | GwError {
  const trimmed = text?.trim() ?? '';
  if (trimmed === '') return null;
  const amountNano = parseAmountField(CAP_AMOUNT_FIELD, trimmed);
  if (isGwError(amountNano)) return amountNano;
  try {
    checkCapSettings('app_connection', { amountNano, currency: SETTLEMENT_CURRENCY });
  } catch (error) {
    const refusal = capRefusal(error);
    return gwError(refusal.code, `${CAP_AMOUNT_FIELD}: ${refusal.message}`);
  }
  return amountNano;
}
