// The consent page: names the app (and who publishes it), where the user will be sent back,
// and the organization whose wallet will pay, chosen among those where the user may connect
// apps, as admin or owner (their personal one first), and takes an optional monthly spending
// cap for the connection (decision 415). Approve and deny post the request back with the
// session's CSRF token. A plain form that works without script, under a policy that allows
// nothing else but one inline script of a few lines (by its hash): the cap field follows the
// organization picked while the user has not typed in it (decision 425). Both fields are
// `autocomplete="off"`: a browser going Back to the page restores neither, so the organization
// shown and the cap shown are always the page's own pair (decisions 439, 445).
import type { Membership } from '../accounts/users.js';
import { escapeHtml, renderPage } from '../http/html.js';
import type { ValidAuthorization } from './authorization-request.js';
import { plainAmount, SETTLEMENT_CURRENCY } from '../money.js';
import type { ExistingConnection } from './connections.js';
import { PKCE_METHOD } from './pkce.js';

/** The consent form's field for the connection's monthly cap (empty: none). */
export const CAP_AMOUNT_FIELD = 'cap_amount';

/**
 * The page's one script (its exact text is allowed by hash: pageHeaders' `scripts`). The
 * field starts from the app's cap in the organization chosen by default; when the user picks
 * another, the field takes that organization's (each option's data-cap, empty: none) unless
 * the user typed in it (theirs stays), and the note under it says where the amount comes
 * from. Without script the field keeps the first amount and the note names its organization.
 */
export const CONSENT_PAGE_SCRIPT = `(() => {
  const org = document.getElementById('org_id');
  const cap = document.getElementById('${CAP_AMOUNT_FIELD}');
  const note = document.getElementById('cap_source');
  if (!org || !cap || !note) return;
  let filled = cap.getAttribute('data-filled');
  const showNote = () => { note.hidden = note.textContent === '' || cap.value !== filled; };
  org.addEventListener('change', () => {
    if (filled === null || cap.value !== filled) return;
    const chosen = org.options[org.selectedIndex];
    filled = chosen.getAttribute('data-cap') || '';
    cap.value = filled;
    note.textContent = chosen.getAttribute('data-cap-note') || '';
    showNote();
  });
  cap.addEventListener('input', showNote);
})();`;

export interface ConsentPage {
  readonly request: ValidAuthorization;
  readonly userEmail: string;
  /** Organizations the user may have pay, the default first. */
  readonly payingOrgs: readonly Membership[];
  readonly csrfToken: string;
  /** Active connections of this app in those organizations, newest first (decision 415). */
  readonly existing: readonly ExistingConnection[];
  /** The form as sent back with a problem: the organization chosen, the cap typed, why. */
  readonly resubmitted?: {
    readonly orgId: string | undefined;
    readonly capAmount: string;
    readonly problem: string;
  };
}

export function renderConsentPage(page: ConsentPage): string {
  const { request } = page;
  const hidden = (name: string, value: string): string =>
    `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
  const chosenOrg = page.resubmitted?.orgId ?? page.payingOrgs[0]?.id;
  // Connecting again starts from the cap the app has in the organization chosen (its newest
  // connection there); each option carries its own for the script to follow the choice.
  const capOf = (orgId: string | undefined): string => {
    const newest = page.existing.find((connection) => connection.orgId === orgId);
    return newest?.capAmountNano == null ? '' : plainAmount(newest.capAmountNano);
  };
  const noteOf = (org: Membership): string =>
    capOf(org.id) === '' ? '' : `Filled in with the cap of its newest connection to ${org.name}.`;
  const options = page.payingOrgs
    .map(
      (org) =>
        `<option value="${escapeHtml(org.id)}" data-cap="${escapeHtml(capOf(org.id))}" data-cap-note="${escapeHtml(noteOf(org))}"${org.id === chosenOrg && org.id !== page.payingOrgs[0]?.id ? ' selected' : ''}>${escapeHtml(org.name)}</option>`,
    )
    .join('');
  const returnTo = destinationOf(request.redirectUri);
  const chosen = page.payingOrgs.find((org) => org.id === chosenOrg);
  // sent back with a problem, the field holds what the user typed: nothing was filled in
  const filled = page.resubmitted ? null : capOf(chosenOrg);
  const capAmount = page.resubmitted?.capAmount ?? filled ?? '';
  const capNote = filled === null || chosen === undefined ? '' : noteOf(chosen);
  const problem = page.resubmitted
    ? `<p class="problem" id="cap_problem" role="alert">${escapeHtml(page.resubmitted.problem)}</p>`
    : '';
  return renderPage(
    `Connect ${request.client.appName}`,
    `<h1>Connect <strong>${escapeHtml(request.client.appName)}</strong> to your gw account?</h1>
<p><strong>${escapeHtml(request.client.appName)}</strong> by ${escapeHtml(request.client.appOrgName)}
wants to make AI requests on your behalf. Every request it makes is paid from the wallet of the
organization you choose below (one where you are an admin or owner), not by the app.</p>
<form method="post" action="/oauth/authorize">
${hidden('response_type', 'code')}
${hidden('client_id', request.client.clientId)}
${hidden('redirect_uri', request.redirectUri)}
${request.state === undefined ? '' : hidden('state', request.state)}
${hidden('code_challenge', request.codeChallenge)}
${hidden('code_challenge_method', PKCE_METHOD)}
${hidden('csrf_token', page.csrfToken)}
<label for="org_id">Organization that pays</label>
<select id="org_id" name="org_id" autocomplete="off">${options}</select>
${existingNotice(page)}
<label for="${CAP_AMOUNT_FIELD}">Monthly spending cap (${SETTLEMENT_CURRENCY}, optional)</label>
<input id="${CAP_AMOUNT_FIELD}" name="${CAP_AMOUNT_FIELD}" type="text" inputmode="decimal" autocomplete="off" maxlength="64" placeholder="No cap" value="${escapeHtml(capAmount)}"${filled === null ? '' : ` data-filled="${escapeHtml(filled)}"`} aria-describedby="cap_source cap_help${page.resubmitted ? ' cap_problem' : ''}">
<p class="muted" id="cap_source"${capNote === '' ? ' hidden' : ''}>${escapeHtml(capNote)}</p>
${problem}
<p class="muted" id="cap_help">The most this app may spend from that wallet in a calendar month
(UTC), such as 10 or 12.50: its requests beyond it are refused. Leave it empty for no cap. You
can change or remove it later under Connected apps.</p>
<p class="muted">Signed in as ${escapeHtml(page.userEmail)}. You can revoke this connection at any
time in the dashboard. After your answer you go back to <code>${escapeHtml(returnTo)}</code>.</p>
<div class="actions">
<button type="submit" name="decision" value="deny">Deny</button>
<button type="submit" name="decision" value="approve" class="primary">Approve</button>
</div>
</form>
<script>${CONSENT_PAGE_SCRIPT}</script>`,
  );
}

/** Says where the app is already connected, and that approving again connects it once more. */
function existingNotice(page: ConsentPage): string {
  if (page.existing.length === 0) return '';
  const names = new Map(page.payingOrgs.map((org) => [org.id, org.name]));
  const items = page.existing
    .map((connection) => {
      const cap =
        connection.capAmountNano === null
          ? 'no cap'
          : `a cap of ${plainAmount(connection.capAmountNano)} ${SETTLEMENT_CURRENCY} a month`;
      return `<li>${escapeHtml(names.get(connection.orgId) ?? connection.orgId)}: ${cap}</li>`;
    })
    .join('');
  return `<div class="muted" id="already_connected"><p>This app is already connected to:</p>
<ul>${items}</ul>
<p>Approving again connects it once more, with the cap below; those connections keep theirs.</p></div>`;
}

/**
 * The page of an authorization request with a bad parameter: what is wrong, and a link that
 * takes the user back to the app with the error (RFC 6749 section 4.1.2.1's answer). The
 * gateway does not send them there on its own: any admin can register a client whose
 * redirect URI is a phishing page, and a request made to fail would turn the gateway's
 * address into a redirector to it (RFC 9700 section 4.11.2). Its URI is registered, so the
 * user is told where the link goes and follows it or not.
 */
export function renderRequestErrorPage(page: {
  readonly appName: string;
  readonly redirectUri: string;
  readonly description: string;
  readonly location: string;
}): string {
  return renderPage(
    'Invalid request',
    `<h1>${escapeHtml(page.appName)} sent an invalid request</h1>
<p>${escapeHtml(page.description)}.</p>
<p class="muted">Nothing was connected. The app can be told about the error at the address it
registered; go there only if you trust it.</p>
<p><a id="back-to-app" href="${escapeHtml(page.location)}">Back to ${escapeHtml(destinationOf(page.redirectUri))}</a></p>`,
  );
}

/** What the user is told they will go back to: the site, or the app's scheme. */
function destinationOf(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.host : url.protocol;
}
