// The accept token of the invitation link this browser was opened from (decision 365: where
// anyone may sign up, accepting needs it), kept in localStorage until it is used: an invitee
// often cannot accept at once (they sign up, follow the verification link in another tab, or
// come back after closing the browser). It is taken out of the address bar as the app loads,
// so it is not left in the history, and forgotten once its invitation is accepted or declined,
// or once no invitation could still be open (INVITATION_DAYS after it was opened). It is worth
// nothing without the invited address's account (the accept route checks both), and the
// browser sends it to no server but in the accept request's body.
const KEY = 'gw:invitation-link';

/** The fragment of an invitation link: `#invitation_token=<token>` (see the create route). */
export const LINK_TOKEN = /invitation_token=([0-9A-Za-z_]+)/;

/** How long an invitation may be accepted (the gateway's rule, decision 359). */
export const INVITATION_DAYS = 7;
const KEPT_MS = INVITATION_DAYS * 24 * 60 * 60 * 1000;

interface Kept {
  readonly token: string;
  /** When the link was opened (ms): no invitation is open longer than INVITATION_DAYS. */
  readonly opened: number;
}

/** Where storage is turned off: kept for this page only. */
let inPage: Kept | null = null;

function read(): Kept | null {
  try {
    const text = localStorage.getItem(KEY);
    if (text === null) return inPage;
    const kept = JSON.parse(text) as Partial<Kept>;
    return typeof kept.token === 'string' && typeof kept.opened === 'number'
      ? { token: kept.token, opened: kept.opened }
      : null;
  } catch {
    return inPage;
  }
}

function write(kept: Kept | null): void {
  inPage = kept;
  try {
    if (kept === null) localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, JSON.stringify(kept));
  } catch {
    // storage turned off or full: kept for this page only
  }
}

/**
 * Keeps the token of the link in the address bar, if any, and clears it from the URL; answers
 * the token ('' when there is none).
 */
function keepOpenedLink(): string {
  const token = LINK_TOKEN.exec(location.hash)?.[1];
  if (token === undefined) return '';
  write({ token, opened: Date.now() });
  history.replaceState(history.state, '', location.pathname + location.search);
  return token;
}

keepOpenedLink();

/** Told of each link opened while the app runs. */
const listeners = new Set<(token: string) => void>();

// A link pasted into a tab already on the dashboard changes only the fragment: the page is not
// loaded again, so the link is read here.
window.addEventListener('hashchange', () => {
  const token = keepOpenedLink();
  if (token !== '') for (const listener of listeners) listener(token);
});

/** Calls `listener` with the token of each invitation link opened from now on; answers the unsubscribe. */
export function onInvitationLinkOpened(listener: (token: string) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The token of the last invitation link opened in this browser ('' if none is kept). */
export function keptInvitationToken(): string {
  const kept = read();
  if (kept === null) return '';
  if (!(Date.now() - kept.opened < KEPT_MS)) {
    write(null);
    return '';
  }
  return kept.token;
}

/** Forgets the kept token (`token` given: only if it is that one). */
export function forgetInvitationToken(token?: string): void {
  const kept = read();
  if (kept !== null && (token === undefined || kept.token === token)) write(null);
}
